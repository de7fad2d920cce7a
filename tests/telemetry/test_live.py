"""Live export: spans sent as events happen, one trace across the processes of a run.

Each "process" is its own :class:`Engine` on its own store connection with its own
listener, as two rein processes would have; the SDK's in-memory exporter collects what
each one sent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.config import load_config
from rein.core.states import ApprovalStatus, RunStatus
from rein.engine.run.approvals import record_answer
from rein.engine.run.runner import prepare
from rein.errors import ConfigError
from rein.telemetry import LiveExport, attach, build_spans
from rein.workers.scripted import ScriptedWorker
from tests.durability.test_resume_budget import Crash, CrashingOnce
from tests.engine.helpers import make_engine
from tests.telemetry.labels import label

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

SCRIPT = {"nodes": {"a": [{"outputs": {}}], "b": [{"outputs": {}}]}}


def _graph(tmp_path: Path, nodes: dict[str, Any]) -> Path:
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/live",
             "title": "live", "objective": "o", "requires_conformance": 3,
             "entrypoints": [next(iter(nodes))], "nodes": nodes}
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    return path


def _engine(tmp_path: Path, worker: Any, *, after: Any = None) -> tuple[Any, Any]:
    """An engine ("a process") with its own live exporter; ``after``: the engine of the
    earlier process, whose clock and ids go on (time does not restart between processes)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    engine = make_engine(tmp_path, workers=(worker,))
    if after is not None:
        engine.clock, engine.ids = after.clock, after.ids
    exporter = InMemorySpanExporter()
    live = attach(engine, processor=SimpleSpanProcessor(exporter))
    assert isinstance(live, LiveExport)
    return engine, exporter


def _ids(spans: Any) -> list[tuple[str, str, str | None]]:
    return sorted((format(s.context.span_id, "016x"), label(s),
                   None if s.parent is None else format(s.parent.span_id, "016x"))
                  for s in spans)


def test_a_paused_run_continued_elsewhere_continues_one_trace(tmp_path: Path) -> None:
    gate = {"type": "gate", "title": "ok", "description": "Approve.",
            "gate": {"mode": "approve", "prompt": "Go on?"}}
    path = _graph(tmp_path, {"a": {"title": "a", "description": "a."},
                             "ok": {**gate, "depends_on": ["a"]},
                             "b": {"title": "b", "description": "b.", "depends_on": ["ok"]}})
    first, sent_first = _engine(tmp_path, ScriptedWorker(SCRIPT))
    prepared = prepare(path, given={}, router=first.router, env=first.env)
    paused = asyncio.run(first.start(prepared, approved=prepared.digest))
    assert paused.status is RunStatus.AWAITING_HUMAN
    early = sent_first.get_finished_spans()
    assert sorted(label(s) for s in early) == ["attempt a #1", "node a"]  # what has ended
    [pending] = first.store.approvals(run_id=paused.run_id, status=ApprovalStatus.PENDING)
    record_answer(first.store, pending, ApprovalStatus.ACCEPTED, {"actor": "tester"},
                  first.now())
    first.store.close()

    second, sent_second = _engine(tmp_path, ScriptedWorker(SCRIPT), after=first)
    assert asyncio.run(second.proceed(paused.run_id)).status is RunStatus.SUCCEEDED
    late = sent_second.get_finished_spans()
    assert sorted(label(s) for s in late) == ["attempt b #1", "node b", "node ok",
                                            "run tests/live"]
    everything = [*early, *late]
    assert len({s.context.span_id for s in everything}) == len(everything)  # each sent once
    assert len({s.context.trace_id for s in everything}) == 1
    ids = {s.context.span_id for s in everything}
    assert all(s.parent is None or s.parent.span_id in ids for s in everything)
    by_name = {label(s): s for s in everything}
    run, gate_span = by_name["run tests/live"], by_name["node ok"]
    # Started in the first process, ended in the second: the first process's start time.
    assert run.start_time <= by_name["node a"].start_time
    assert gate_span.start_time < by_name["attempt b #1"].start_time
    assert by_name["node a"].parent.span_id == run.context.span_id
    # Live export and the after-the-fact trace name the same spans.
    plain = build_spans(second.store, paused.run_id)
    assert _ids(everything) == sorted((s.span_id, s.label, s.parent_span_id) for s in plain)
    assert all(s.end is not None for s in plain)


def test_an_interrupted_attempt_and_its_rerun_are_two_spans_of_one_node(tmp_path: Path
                                                                        ) -> None:
    path = _graph(tmp_path, {"a": {"title": "a", "description": "a."},
                             "b": {"title": "b", "description": "b.", "depends_on": ["a"]}})
    worker = CrashingOnce(SCRIPT, crash_node="b")
    first, sent_first = _engine(tmp_path, worker)
    prepared = prepare(path, given={}, router=first.router, env=first.env)
    with pytest.raises(Crash):
        asyncio.run(first.start(prepared, approved=prepared.digest))
    first.store.close()
    assert sorted(label(s) for s in sent_first.get_finished_spans()) == ["attempt a #1",
                                                                       "node a"]
    second, sent_second = _engine(tmp_path, worker, after=first)
    [run] = second.store.list_runs()
    assert asyncio.run(second.resume(run.run_id)).status is RunStatus.SUCCEEDED
    late = sent_second.get_finished_spans()
    attempts = [s for s in late if label(s) == "attempt b #1"]
    assert len(attempts) == 2
    interrupted, rerun = sorted(attempts, key=lambda s: s.start_time)
    assert interrupted.attributes["rein.interrupted"] is True
    assert interrupted.status.status_code.name == "ERROR"
    assert rerun.attributes["rein.rerun"] is True and rerun.status.status_code.name == "OK"
    assert interrupted.context.span_id != rerun.context.span_id
    [node_b] = [s for s in late if label(s) == "node b"]
    assert interrupted.parent.span_id == rerun.parent.span_id == node_b.context.span_id
    everything = [*sent_first.get_finished_spans(), *late]
    plain = build_spans(second.store, run.run_id)
    assert _ids(everything) == sorted((s.span_id, s.label, s.parent_span_id) for s in plain)


def test_attach_follows_rein_toml_and_the_environment(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    engine.env = {"PATH": "/usr/bin:/bin", "REIN_USER_CONFIG": str(tmp_path / "none.toml"),
                  "REIN_MANAGED_CONFIG": str(tmp_path / "none.toml")}
    assert attach(engine) is None  # nothing asks for it
    (tmp_path / "rein.toml").write_text("[telemetry]\notel = true\n")
    # The engine reads no rein.toml itself: it is given the settings that now ask for it.
    engine.config = load_config(tmp_path, env=engine.env)
    with pytest.raises(ConfigError) as missing:
        attach(engine)  # asked for, but no endpoint and no exporter named
    assert missing.value.code == "OTEL_ENDPOINT"
    engine.env = {**engine.env, "OTEL_TRACES_EXPORTER": "console"}
    live = attach(engine)
    assert isinstance(live, LiveExport) and live in engine.listeners
    assert attach(engine) is live  # once per engine
    (tmp_path / "rein.toml").unlink()
    other = make_engine(tmp_path)
    other.env = {**engine.env, "OTEL_TRACES_EXPORTER": "otlp",
                 "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError) as no_otlp:
            attach(other)
        assert no_otlp.value.code == "OTEL_OTLP_MISSING"
        assert "opentelemetry-exporter-otlp" in no_otlp.value.hint
    else:
        assert isinstance(attach(other), LiveExport)


class RefusingProcessor:
    """A test double: a span processor whose exporter is broken."""

    def on_end(self, span: Any) -> None:
        raise RuntimeError("collector said no")

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return False


def test_a_broken_exporter_does_not_stop_the_run(tmp_path: Path) -> None:
    path = _graph(tmp_path, {"a": {"title": "a", "description": "a."}})
    engine = make_engine(tmp_path, workers=(ScriptedWorker(SCRIPT),))
    live = attach(engine, processor=RefusingProcessor())
    assert live is not None
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    assert outcome.status is RunStatus.SUCCEEDED
    assert live.sent == 0
    assert sorted(f.split(":")[0] for f in live.failures) == [
        "attempt a #1", "node a", "run tests/live"]
