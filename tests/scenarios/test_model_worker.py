"""The model worker inside runs, built from rein.toml: the scripted provider, both providers'
wire fixtures, permissions at every call, and tool calls in ``ask`` through the queue."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support import ROOT

from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, call, graph, ms_fixture, task

__all__ = ["ms_fixture"]  # the fixture this module's tests use

WIRE = ROOT / "tests" / "fixtures" / "wire"


def two_nodes() -> dict[str, Any]:
    """write_note (task, tier standard) → check_note (decision, tier advanced)."""
    write = task("Write the note", tools=["file_read", "file_write"],
                 permissions=["fs:read:**", "fs:write:NOTE.md"], outputs={"summary": "what"})
    write["success"] = {"criteria": [{"id": "note", "kind": "file_exists",
                                      "description": "NOTE.md exists", "path": "NOTE.md"}]}
    check = task("Check the note", tools=["file_read"], permissions=["fs:read:**"],
                 outputs={"reason": "why"}, tier="advanced", write=False)
    check["type"] = "decision"
    check["depends_on"] = ["write_note"]
    check["decision"] = {"evaluator": "agent", "question": "Ship the note?", "branches": [
        {"label": "ship", "description": "it is fine"},
        {"label": "revise", "description": "it needs work"}]}
    return graph("two-nodes", {"write_note": write, "check_note": check}, "write_note")


def test_scripted_provider_from_rein_toml_runs_a_two_node_graph(ms: ModelScenario) -> None:
    ms.turns("turns.json", [
        call("file_write", path="NOTE.md", content="# Note\n"),
        call("submit_outputs", summary="wrote NOTE.md"),
        call("file_read", path="NOTE.md"),
        call("submit_outputs", decision="ship", reason="it has a heading"),
    ])
    ms.toml('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n\n'
            '[routing]\nallow_route_up = false\n\n'
            '[tiers.advanced]\nprovider = "script"\nmodel = "scripted-2"\n')
    code, out = ms.run(ms.graph("g.agraph.yaml", two_nodes()))
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"
    assert (ms.root / "NOTE.md").read_text() == "# Note\n"
    nodes = {n["node_id"]: n for n in ms.record()["nodes"]}
    assert nodes["check_note"]["decision"] == "ship"
    assert nodes["write_note"]["attempts"][0]["routed"] == {
        "requested_tier": "standard", "effective_tier": "standard", "provider": "script",
        "model": "scripted-1", "downgraded": False}
    assert nodes["check_note"]["attempts"][0]["routed"]["model"] == "scripted-2"


def test_routing_up_is_recorded_and_served_by_the_higher_tier_worker(
        ms: ModelScenario) -> None:
    ms.turns("turns.json", [call("file_write", path="NOTE.md", content="# Note\n"),
                            call("submit_outputs", summary="done")])
    ms.toml('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.advanced]\nprovider = "script"\nmodel = "big"\n')
    node = two_nodes()["nodes"]["write_note"]
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("up", {"write_note": node},
                                                         "write_note")))
    assert code == 0, out
    routed = ms.record()["nodes"][0]["attempts"][0]["routed"]
    assert routed["requested_tier"] == "standard" and routed["effective_tier"] == "advanced"
    assert routed["provider"] == "script" and routed["model"] == "big"


def wire_toml(ms: ModelScenario, kind: str) -> str:
    """Replay fixtures copied into the workspace: a project's offline double that reads
    files outside it needs trust."""
    for name in ("write_note.json", "submit_note.json", "read_note.sse", "decide_ship.sse"):
        ms.file(f"wire/{name}", (WIRE / kind / name).read_text())
    return (f'[providers.writer]\nkind = "{kind}"\noptions = {{ replay = '
            '["wire/write_note.json", "wire/submit_note.json"] }\n\n'
            f'[providers.checker]\nkind = "{kind}"\noptions = {{ stream = true, replay = '
            '["wire/read_note.sse", "wire/decide_ship.sse"] }\n\n'
            '[routing]\nallow_route_up = false\n\n'
            '[tiers.standard]\nprovider = "writer"\nmodel = "writer-model"\n\n'
            '[tiers.advanced]\nprovider = "checker"\nmodel = "checker-model"\n')


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_model_worker_completes_two_nodes_against_each_providers_wire_fixtures(
        ms: ModelScenario, kind: str) -> None:
    ms.monkeypatch.setenv("OPENAI_API_KEY", "sk-test-rein-wire")
    ms.monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-rein-wire")
    ms.toml(wire_toml(ms, kind))
    code, out = ms.run(ms.graph("g.agraph.yaml", two_nodes()))
    assert code == 0, out
    assert "rein was here." in (ms.root / "NOTE.md").read_text()
    nodes = {n["node_id"]: n for n in ms.record()["nodes"]}
    assert nodes["write_note"]["status"] == "succeeded"
    assert nodes["write_note"]["outputs"]["summary"].startswith("Wrote NOTE.md")
    assert nodes["check_note"]["decision"] == "ship"
    calls = [(i["name"], i["arguments"].get("path")) for i in ms.items("tool_call")]
    assert calls == [("file_write", "NOTE.md"), ("submit_outputs", None),
                     ("file_read", "NOTE.md"), ("submit_outputs", None)]
    results = ms.items("tool_result")
    assert results[2]["ok"] and "rein was here." in results[2]["content"]
    usage = nodes["write_note"]["attempts"][0]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert nodes["check_note"]["attempts"][0]["routed"]["provider"] == "checker"


def test_a_call_outside_the_effective_permissions_is_refused_and_the_model_adjusts(
        ms: ModelScenario) -> None:
    ms.turns("turns.json", [
        call("file_write", path="secrets.txt", content="x"),
        call("file_write", path="src/a.py", content="print('a')\n"),
        call("submit_outputs", summary="wrote src/a.py"),
    ])
    ms.toml('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n'
            '[policy]\ndeny_paths = ["src/private"]\n')
    node = task("Write code", tools=["file_write"], permissions=["fs:write:src/**"],
                outputs={"summary": "what"})
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("perm", {"code": node}, "code")))
    assert code == 0, out
    assert not (ms.root / "secrets.txt").exists()
    assert (ms.root / "src" / "a.py").read_text() == "print('a')\n"
    first, second, _ = ms.items("tool_result")
    assert first["refused"] is True and first["ok"] is False
    assert first["content"] == ("refused fs:write:secrets.txt: not covered by this node's "
                                "permissions; allowed for fs:write: fs:write:src/**")
    assert second["ok"] is True
    # computed once per attempt, recorded in the run: node ∩ rein.toml policy (∩ sandbox)
    effective = [i for i in ms.items("notice") if "permissions" in i]
    assert len(effective) == 1
    perms = effective[0]["permissions"]
    assert perms["grants"] == ["fs:write:src/**"]
    assert "fs:write:src/private/**" in perms["denied"]
    assert effective[0]["sandbox"]["type"] == "workspaceWrite"


def ask_setup(ms: ModelScenario) -> str:
    """A node whose file_write needs a person (rein.toml: edit = "ask"); the content holds
    the node's secret so the queue must show it redacted."""
    ms.monkeypatch.setenv("REIN_SECRET_API_TOKEN", "tok-5ecret-value")
    ms.turns("turns.json", [
        call("file_write", path="NOTE.md", content="token tok-5ecret-value\n"),
        call("submit_outputs", summary="finished"),
    ])
    ms.toml('[providers.script]\nkind = "scripted"\n'
            'options = { script = "turns.json", position = "conversation" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n'
            '[policy]\nedit = "ask"\n')
    node = task("Write the note", tools=["file_write"], permissions=["fs:write:NOTE.md"],
                outputs={"summary": "what"})
    node["requirements"]["secrets"] = ["api_token"]
    data = graph("ask", {"write_note": node}, "write_note")
    data["secrets"] = [{"name": "api_token", "description": "a token", "required": True}]
    return ms.graph("g.agraph.yaml", data)


def test_ask_waits_in_the_queue_and_accept_resumes_the_loop(ms: ModelScenario) -> None:
    code, out = ms.run(ask_setup(ms))
    assert code == 3, out
    assert summary(out)["status"] == "awaiting_human"
    assert not (ms.root / "NOTE.md").exists()
    [pending] = ms.pending()
    assert pending["kind"] == "tool_call"
    request = pending["request"]
    assert request["tool"] == "file_write" and request["node"] == "write_note"
    assert request["arguments"] == {"path": "NOTE.md", "content": "token [secret:api_token]\n"}
    assert "tok-5ecret-value" not in json.dumps(pending)
    code, text = ms.rein("approvals", "list")
    assert "file_write" in text and "NOTE.md" in text
    saved = [e for e in ms.events() if e.type == "attempt/state"]
    assert saved and saved[-1].payload["state"]["pending"][0]["name"] == "file_write"

    code, out = ms.rein("approvals", "accept", pending["approval_id"], "--json")
    assert code == 0, out
    assert (ms.root / "NOTE.md").read_text() == "token tok-5ecret-value\n"
    [node] = ms.record()["nodes"]
    assert node["status"] == "succeeded" and node["outputs"] == {"summary": "finished"}
    resumed = [i for i in ms.items("notice") if i.get("resumed")]
    assert len(resumed) == 1
    # the tool call was announced once, before the pause; its result came after the answer
    assert [i["name"] for i in ms.items("tool_call")] == ["file_write", "submit_outputs"]
    states = [e.payload["state"] for e in ms.events() if e.type == "attempt/state"]
    assert states[-1] is None  # consumed when the attempt finished


def test_decline_tells_the_model_and_the_loop_goes_on(ms: ModelScenario) -> None:
    ms.run(ask_setup(ms))
    [pending] = ms.pending()
    code, out = ms.rein("approvals", "decline", pending["approval_id"], "--json")
    assert code == 0, out
    assert not (ms.root / "NOTE.md").exists()
    refusal = ms.items("tool_result")[0]
    assert refusal["refused"] is True
    assert refusal["content"] == "refused fs:write:NOTE.md: a person declined this call"
    assert ms.record()["nodes"][0]["status"] == "succeeded"


def test_cancel_stops_the_run(ms: ModelScenario) -> None:
    ms.run(ask_setup(ms))
    [pending] = ms.pending()
    code, out = ms.rein("approvals", "cancel", pending["approval_id"], "--json")
    assert code == 1, out
    assert summary(out)["status"] == "cancelled"
    assert not (ms.root / "NOTE.md").exists()
