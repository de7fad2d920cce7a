"""``rein runs trace``: the run's spans as JSON without OpenTelemetry; ``--export`` with it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import yaml

from rein.cli import main
from rein.core.states import RunStatus
from rein.engine.run.runner import prepare
from rein.workers.scripted import ScriptedWorker
from tests.engine.helpers import make_engine

GRAPH = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/trace-cli",
         "title": "trace", "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
         "nodes": {"a": {"title": "a", "description": "a."},
                   "b": {"title": "b", "description": "b.", "depends_on": ["a"]}}}
OTEL_VARS = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
             "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
             "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")


@pytest.fixture
def run_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in OTEL_VARS:
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    engine = make_engine(tmp_path, workers=(ScriptedWorker(
        {"nodes": {"a": [{"outputs": {}}], "b": [{"outputs": {}}]}}),))
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    engine.store.close()
    assert outcome.status is RunStatus.SUCCEEDED
    return outcome.run_id


def _trace(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str
           ) -> tuple[int, str, str]:
    code = main(["runs", "trace", *args, "--workspace", str(tmp_path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_json_lists_every_span_with_ids_parents_and_times(
        tmp_path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _trace(tmp_path, capsys, run_id, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["run_id"] == run_id and doc["exported"] is None
    spans = doc["spans"]
    assert [s["label"] for s in spans] == ["run tests/trace-cli", "node a", "attempt a #1",
                                           "node b", "attempt b #1"]
    # Stable names; the ids are attributes (and in the label, for people).
    assert [s["name"] for s in spans] == ["run", "node", "attempt", "node", "attempt"]
    assert set(spans[0]) == {"name", "label", "kind", "trace_id", "span_id",
                             "parent_span_id", "start", "end", "attributes", "status",
                             "status_message", "events", "links"}
    by_name = {s["label"]: s for s in spans}
    assert {s["trace_id"] for s in spans} == {doc["trace_id"]}
    assert by_name["run tests/trace-cli"]["parent_span_id"] is None
    assert by_name["node b"]["parent_span_id"] == by_name["run tests/trace-cli"]["span_id"]
    assert by_name["attempt b #1"]["parent_span_id"] == by_name["node b"]["span_id"]
    assert all(s["status"] == "ok" and s["start"] <= s["end"] for s in spans)
    assert by_name["attempt a #1"]["attributes"]["rein.worker"] == "scripted"
    assert len({s["span_id"] for s in spans}) == 5
    # Derived from the run, not drawn at random: asking again gives the same ids.
    assert json.loads(_trace(tmp_path, capsys, run_id, "--json")[1]) == doc


def test_trace_text_indents_spans_below_their_parent(
        tmp_path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _trace(tmp_path, capsys, run_id)
    assert code == 0
    lines = out.splitlines()
    assert [line.split("ok", 1)[1].rstrip() for line in lines] == [
        "    run tests/trace-cli", "      node a", "        attempt a #1",
        "      node b", "        attempt b #1"]


def test_export_without_an_endpoint_says_what_to_set(
        tmp_path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    code, out, err = _trace(tmp_path, capsys, run_id, "--export")
    assert code == 64 and out == ""
    assert "OTEL_ENDPOINT" in err and "OTEL_EXPORTER_OTLP_ENDPOINT" in err


def test_export_to_the_console_sends_every_span(
        tmp_path: Path, run_id: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    code, out, err = _trace(tmp_path, capsys, run_id, "--export", "--json")
    assert code == 0
    doc = json.loads(out)  # stdout stays one JSON object: the console exporter uses stderr
    assert doc["exported"] == 5
    printed = err.count('"kind": "SpanKind.')
    assert printed == 5 and doc["spans"][0]["span_id"] in err


def test_otlp_export_without_the_exporter_package_names_it(
        tmp_path: Path, run_id: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    # Where the package is installed (the test extras install it), its import is made to
    # fail as it fails without it: None in sys.modules raises ImportError.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter",
                        None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    code, out, err = _trace(tmp_path, capsys, run_id, "--export")
    assert code == 64 and out == ""
    assert "OTEL_OTLP_MISSING" in err and "opentelemetry-exporter-otlp" in err
