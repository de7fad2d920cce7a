"""Runs, nodes and attempts become OpenTelemetry spans (the SDK's in-memory exporter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rein.store.sqlite import SQLiteStore
from rein.telemetry import build_spans, export_run
from tests.durability import graphs
from tests.durability.support import rein, runs, write_graph
from tests.telemetry.labels import label

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")


def test_a_run_becomes_a_trace_of_run_node_and_attempt_spans(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    graph, answers = graphs.chain()
    digest = write_graph(tmp_path, graph, answers)
    assert rein(tmp_path, "run", "g.agraph.yaml", "--approve", digest).returncode == 0
    [row] = runs(tmp_path)
    exporter = InMemorySpanExporter()
    store = SQLiteStore.open(tmp_path, create=False)
    try:
        made = export_run(store, row["run_id"], exporter=exporter)
        plain = build_spans(store, row["run_id"])
    finally:
        store.close()
    spans = {label(s): s for s in exporter.get_finished_spans()}
    assert made == len(spans) == 1 + 4 + 5  # the run, four nodes, five attempts (c twice)
    run = spans["run tests/durable-chain"]
    assert run.parent is None and run.attributes["rein.status"] == "succeeded"
    assert {s.context.trace_id for s in spans.values()} == {run.context.trace_id}
    node_c = spans["node c"]
    assert node_c.parent.span_id == run.context.span_id
    first, second = spans["attempt c #1"], spans["attempt c #2"]
    assert first.parent.span_id == second.parent.span_id == node_c.context.span_id
    assert first.attributes["rein.result"] == "criteria_failed"
    assert first.status.status_code.name == "ERROR"
    assert second.attributes["rein.result"] == "succeeded"
    assert first.start_time <= first.end_time <= second.start_time <= node_c.end_time
    assert node_c.end_time <= run.end_time
    # The SDK spans carry exactly the ids `rein runs trace` prints.
    assert sorted((format(s.context.span_id, "016x"), label(s)) for s in spans.values()) == \
        sorted((s.span_id, s.label) for s in plain)
    assert {format(s.context.trace_id, "032x") for s in spans.values()} == \
        {s.trace_id for s in plain}
