"""Spans a collector understands: the GenAI semantic conventions for model and tool calls,
approvals as span events, map items and loop iterations under their node, stable names,
and ``OTEL_SERVICE_NAME``, received over OTLP/HTTP by a receiver built on
``opentelemetry-proto`` (the collector's own message types). The model is the scripted
provider."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rein.core.states import RunStatus
from rein.store.sqlite import SQLiteStore
from rein.telemetry import build_spans
from tests.scenarios.build import Run, graph, task
from tests.scenarios.model_env import ModelScenario, call, ms_fixture
from tests.scenarios.model_env import graph as model_graph
from tests.scenarios.model_env import task as model_task

__all__ = ["ms_fixture"]

PROVIDER = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "qwen3-8b"\n')


class Receiver:
    """An OTLP/HTTP trace receiver: each POST to /v1/traces is parsed as the collector
    parses it (``ExportTraceServiceRequest``) and answered as the collector answers."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self.requests: list[Any] = []
        pb = trace_service_pb2
        received = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = pb.ExportTraceServiceRequest()
                request.ParseFromString(body)
                received.append((self.path, self.headers["Content-Type"], request))
                answer = pb.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every span received, with its resource's attributes."""
        out = []
        for _, _, request in self.requests:
            for resource_spans in request.resource_spans:
                resource = attrs(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    out += [(resource, span) for span in scope.spans]
        return out


def attrs(values: Any) -> dict[str, Any]:
    """OTLP key-values as a dict."""
    out: dict[str, Any] = {}
    for kv in values:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


@pytest.fixture(name="receiver")
def receiver_fixture() -> Iterator[Receiver]:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                        reason="opentelemetry-exporter-otlp-proto-http is not installed")
    receiver = Receiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def test_model_and_tool_calls_arrive_over_otlp_with_the_genai_conventions(
        ms: ModelScenario, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    ms.toml(PROVIDER)
    ms.turns("turns.json", [call("file_write", path="NOTE.md", content="# Note\n"),
                            call("submit_outputs", summary="done")])
    node = model_task("Write", tools=["file_write"], outputs={"summary": "done"},
                      permissions=["fs:write:**", "fs:read:**"])
    code, out = ms.run(ms.graph("w.agraph.yaml", model_graph("w", {"write": node}, "write")))
    assert code == 0, out
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "notes-agents")
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    code, out = ms.rein("runs", "trace", ms.last_run(), "--export")
    assert code == 0, out
    [(path, content_type, _)] = receiver.requests
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    received = receiver.spans()
    spans = [(s.name, attrs(s.attributes), s) for _, s in received]
    # Stable names: no id in any of them.
    assert sorted(name for name, _, _ in spans) == sorted([
        "run", "node", "attempt", "chat qwen3-8b", "execute_tool file_write",
        "chat qwen3-8b", "execute_tool submit_outputs"])
    by_id = {s.span_id: (name, a) for name, a, s in spans}
    [(_, attempt_attrs, attempt)] = [x for x in spans if x[0] == "attempt"]
    assert attempt_attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attempt_attrs["gen_ai.agent.name"] == "write" and attempt_attrs["rein.node"] == "write"
    chats = sorted((x for x in spans if x[0] == "chat qwen3-8b"),
                   key=lambda x: x[2].start_time_unix_nano)
    for _, a, s in chats:
        assert s.parent_span_id == attempt.span_id
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == "qwen3-8b"
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (100, 10)
    [(_, tool, write)] = [x for x in spans if x[0] == "execute_tool file_write"]
    assert write.parent_span_id == attempt.span_id
    assert tool["gen_ai.operation.name"] == "execute_tool"
    assert tool["gen_ai.tool.name"] == "file_write" and tool["gen_ai.tool.type"] == "function"
    assert tool["gen_ai.tool.call.id"] == "call_1_0" and tool["rein.ok"] is True
    # In order: the first model call, the write it asked for, the second model call.
    first, second = chats[0][2], chats[1][2]
    assert first.end_time_unix_nano <= write.start_time_unix_nano
    assert write.end_time_unix_nano <= second.start_time_unix_nano
    assert by_id[attempt.parent_span_id][0] == "node"
    # The graph's approval is an event of the run's span.
    [run] = [s for name, _, s in spans if name == "run"]
    [approval] = run.events
    assert approval.name == "approval.answered"
    assert attrs(approval.attributes)["rein.approval.kind"] == "graph"
    assert attrs(approval.attributes)["rein.approval.status"] == "accepted"
    assert {r["service.name"] for r, _ in received} == {"notes-agents"}


def test_without_a_service_name_the_service_is_rein(
        ms: ModelScenario, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    ms.toml(PROVIDER)
    ms.turns("turns.json", [call("submit_outputs", summary="done")])
    node = model_task("Say", tools=[], outputs={"summary": "done"}, permissions=[])
    code, out = ms.run(ms.graph("s.agraph.yaml", model_graph("s", {"say": node}, "say")))
    assert code == 0, out
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
    assert ms.rein("runs", "trace", ms.last_run(), "--export")[0] == 0
    resources = [r for r, _ in receiver.spans()]
    assert resources and all(r["service.name"] == "rein" and
                             r["deployment.environment"] == "test" for r in resources)


BODY = {"entrypoints": ["a"], "nodes": {"a": task("a")}}
MAP_AND_LOOP = graph({
    "fan": {"type": "map", "title": "fan", "description": "Fan out.",
            "map": {"over": "[1, 2]", "as": "it", "max_items": 5, "body": BODY}},
    "again": {"type": "loop", "title": "again", "description": "Again.",
              "loop": {"mode": "repeat", "max_iterations": 2, "body": BODY}},
}, ["fan", "again"])


def test_map_items_and_loop_iterations_sit_under_their_node(tmp_path: Path) -> None:
    run = Run(tmp_path, MAP_AND_LOOP, {"a": [{"outputs": {}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    store = SQLiteStore.open(tmp_path, create=False)
    try:
        spans = build_spans(store, run.run_id)
    finally:
        store.close()
    by_label = {s.label: s for s in spans}
    by_id = {s.span_id: s for s in spans}

    def parents(label: str) -> list[str]:
        out, up = [], by_label[label].parent_span_id
        while up is not None:
            out.append(by_id[up].label)
            up = by_id[up].parent_span_id
        return out

    assert parents("attempt fan[1].a #1") == [
        "node fan[1].a", "map item fan[1]", "node fan", "run tests/scenario"]
    assert parents("node again[0].a") == ["loop iteration again[0]", "node again",
                                          "run tests/scenario"]
    item = by_label["map item fan[1]"]
    assert item.name == "map item" and by_label["loop iteration again[1]"].name == \
        "loop iteration"
    assert dict(item.attributes) == {"rein.run_id": run.run_id, "rein.node": "fan",
                                     "rein.index": 1, "rein.status": "succeeded"}
    body = by_label["node fan[1].a"]
    assert body.name == "node" and body.attributes["rein.node_id"] == "a"
    assert body.attributes["rein.index"] == 1
    assert item.start <= body.start and body.end is not None and item.end is not None
    assert body.end <= item.end <= by_label["node fan"].end  # type: ignore[operator]
    # Every name is one of a few: the ids are attributes.
    assert {s.name for s in spans} == {"run", "node", "map item", "loop iteration",
                                       "attempt"}


TOML = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')


def test_a_conversations_turns_are_linked_and_an_approval_is_an_event_of_its_attempt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import rein
    from tests.scenarios.model_env import isolate

    isolate(tmp_path, monkeypatch)
    (tmp_path / "rein.toml").write_text(TOML)
    (tmp_path / "turns.json").write_text(json.dumps([
        call("shell_exec", command="echo hi"), call("submit_outputs", reply="ok"),
        call("submit_outputs", reply="again")]))
    with rein.Harness.open(tmp_path) as harness:
        thread = harness.start_thread()
        assert thread.run_sync("run it", on_approval=lambda r: "accept").status == "completed"
        assert thread.run_sync("and again").status == "completed"
        first, second = harness.store.thread_turns(thread.id)
        one = build_spans(harness.store, str(first.run_id))
        two = build_spans(harness.store, str(second.run_id))
    [run_one] = [s for s in one if s.name == "run"]
    [run_two] = [s for s in two if s.name == "run"]
    assert run_one.trace_id != run_two.trace_id  # a trace per turn, linked in order
    assert run_one.links == ()
    assert run_two.links == ((run_one.trace_id, run_one.span_id),)
    for span, turn in ((run_one, first), (run_two, second)):
        assert span.attributes["gen_ai.conversation.id"] == thread.id
        assert span.attributes["rein.turn_id"] == turn.turn_id
    [attempt] = [s for s in one if s.name == "attempt"]
    assert attempt.attributes["gen_ai.conversation.id"] == thread.id
    assert [e.name for e in attempt.events] == ["approval.requested", "approval.answered"]
    asked, answered = attempt.events
    assert asked.attributes["rein.approval_id"] == answered.attributes["rein.approval_id"]
    assert answered.attributes["rein.approval.status"] == "accepted"
