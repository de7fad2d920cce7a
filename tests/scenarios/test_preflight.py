"""Refusals before anything is spent (AGS §17.7 step 2): tools and MCP servers (RT012),
permissions against rein's policy, determinism (RT013), isolation (RT014); a child document
that changed under a run (RT051, RT053); expression errors under ``on_expression_error``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.states import RunStatus
from rein.errors import Refused
from rein.formats.canonical import ags_digest
from rein.profiles.policy import Policy
from rein.workers.scripted import ScriptedWorker
from tests.scenarios.build import Run, graph, out, states, task

OK = [{"outputs": {}}]


def needs(**requirements: Any) -> dict[str, Any]:
    return graph({"a": task("a", requirements=requirements), "b": task("b", depends_on=["a"])},
                 ["a"])


def assert_blocked(run: Run, code: str, text: str) -> None:
    assert run.start().status is RunStatus.FAILED
    assert run.worker.calls == []  # nothing was spent
    a = run.node("a")
    assert a["status"] == "blocked" and "attempts" not in a
    assert a["x-rein-blocked"]["code"] == code and text in a["x-rein-blocked"]["message"]
    assert states(run.record())["b"] == "skipped"
    assert run.record()["usage"]["node_executions"] == 0


def test_a_permission_outside_the_policy_blocks_the_node(tmp_path: Path) -> None:
    (tmp_path / "rein.toml").write_text('[policy]\nshell = "deny"\n')
    run = Run(tmp_path, needs(permissions=["shell:exec:pytest*"]), {"a": OK, "b": OK})
    assert_blocked(run, "PERM002", "policy.shell is deny")


@pytest.mark.parametrize(("policy", "permission", "text"), [
    ({"write_roots": ["docs"]}, "fs:write:src/**", "outside policy.write_roots"),
    ({"deny_paths": [".git"]}, "fs:write:.git/hooks/**", "under policy.deny_paths"),
    ({"allow_hosts": ["api.example.com"]}, "net:fetch:https://evil.example.org",
     "evil.example.org is not in policy.allow_hosts"),
    ({"edit": "deny"}, "git:commit", "policy.edit is deny"),
])
def test_targets_outside_the_policy_are_refused(tmp_path: Path, policy: dict[str, Any],
                                                permission: str, text: str) -> None:
    run = Run(tmp_path, needs(permissions=[permission]), {"a": OK, "b": OK},
              policy=Policy.from_mapping(policy))
    assert_blocked(run, "PERM002", text)


@pytest.mark.parametrize("permission", ["fs:write:docs/**", "net:fetch:https://api.example.com",
                                        "shell:exec:pytest*"])
def test_requests_inside_the_policy_run(tmp_path: Path, permission: str) -> None:
    policy = Policy.from_mapping({"write_roots": ["docs"], "allow_hosts": ["api.example.com"],
                                  "shell": "ask"})
    run = Run(tmp_path, needs(permissions=[permission]), {"a": OK, "b": OK}, policy=policy)
    assert run.start().status is RunStatus.SUCCEEDED


def test_a_blocked_node_still_takes_on_exhausted(tmp_path: Path) -> None:
    data = graph({"a": task("a", requirements={"permissions": ["shell:exec:make"]},
                            failure={"on_exhausted": "skip", "retry": {"max_attempts": 3}})},
                 ["a"])
    run = Run(tmp_path, data, {"a": OK}, policy=Policy.from_mapping({"shell": "deny"}))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("a")["status"] == "skipped" and run.worker.calls == []


def test_an_unknown_tool_is_rt012(tmp_path: Path) -> None:
    run = Run(tmp_path, needs(tools=["browser"]), {"a": OK, "b": OK})
    assert_blocked(run, "RT012", "'browser'")


@pytest.mark.parametrize("tool", [
    {"name": "browser", "alternatives": ["http_fetch"]},
    {"name": "browser", "optional": True},
    "file_read",
])
def test_alternatives_and_optional_tools_are_tried_first(tmp_path: Path, tool: Any) -> None:
    run = Run(tmp_path, needs(tools=[tool]), {"a": OK, "b": OK})
    assert run.start().status is RunStatus.SUCCEEDED


def test_a_tool_the_policy_denies_is_not_provided(tmp_path: Path) -> None:
    run = Run(tmp_path, needs(tools=["shell_exec"]), {"a": OK, "b": OK},
              policy=Policy.from_mapping({"deny_tools": ["shell_exec"]}))
    assert_blocked(run, "RT012", "'shell_exec'")


class ProvidingWorker(ScriptedWorker):
    """Test double: a scripted worker that says it brings a browser and a GitHub server."""

    def provides_tool(self, name: str, node: Mapping[str, Any]) -> bool:
        return name == "browser"

    def provides_mcp_server(self, name: str, node: Mapping[str, Any]) -> bool:
        return name == "github"


def test_a_worker_can_provide_tools_and_mcp_servers(tmp_path: Path) -> None:
    run = Run(tmp_path, needs(tools=["browser"], mcp_servers=["github"]), {"a": OK, "b": OK})
    run.engine.workers = (ProvidingWorker({"nodes": {"a": OK, "b": OK}}),)
    assert run.start().status is RunStatus.SUCCEEDED


def test_a_required_mcp_server_nobody_offers_is_rt012(tmp_path: Path) -> None:
    run = Run(tmp_path, needs(mcp_servers=["github"]), {"a": OK, "b": OK})
    assert_blocked(run, "RT012", "MCP server 'github'")


class UnsteadyWorker(ScriptedWorker):
    """Test double: answers like the scripted worker but cannot promise determinism."""

    deterministic = False


def test_determinism_strict_with_an_unsteady_worker_is_rt013(tmp_path: Path) -> None:
    data = graph({"a": task("a", constraints={"determinism": "strict"}),
                  "b": task("b", depends_on=["a"])}, ["a"])
    run = Run(tmp_path, data, {"a": OK, "b": OK})
    worker = UnsteadyWorker({"nodes": {"a": OK, "b": OK}})
    run.engine.workers = (worker,)
    run.worker = worker
    assert_blocked(run, "RT013", "determinism: strict")


def test_determinism_strict_with_the_scripted_worker_runs(tmp_path: Path) -> None:
    data = graph({"a": task("a", constraints={"determinism": "strict"})}, ["a"])
    run = Run(tmp_path, data, {"a": OK})
    assert run.start().status is RunStatus.SUCCEEDED


def test_isolation_that_cannot_be_provided_is_rt014(tmp_path: Path) -> None:
    data = graph({"a": task("a", constraints={"isolation": "container"}),
                  "b": task("b", depends_on=["a"])}, ["a"])
    run = Run(tmp_path, data, {"a": OK, "b": OK})
    assert_blocked(run, "RT014", "isolation 'container'")


def pinned_child(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    child = graph({"c": task("c", outputs=out("v"))}, ["c"],
                  outputs={"v": {"type": "string", "description": "v",
                                 "from": "nodes.c.outputs.v"}})
    child["id"] = "tests/child"
    (tmp_path / "child.agraph.yaml").write_text(yaml.safe_dump(child, sort_keys=False))
    sub = {"type": "subgraph", "title": "sub", "description": "Child.",
           "subgraph": {"ref": {"uri": "child.agraph.yaml", "integrity": ags_digest(child),
                                "expected_id": "tests/child"}}}
    return child, sub


def test_a_child_document_changed_during_the_run_is_rt051(tmp_path: Path) -> None:
    child, sub = pinned_child(tmp_path)
    edited = yaml.safe_dump({**child, "title": "changed by node work"}, sort_keys=False)
    edit = task("edit", requirements={"workspace": "read_write",
                                      "permissions": ["fs:write:child.agraph.yaml"]})
    data = graph({"edit": edit, "sub": {**sub, "depends_on": ["edit"]}}, ["edit"])
    run = Run(tmp_path, data, {"edit": [{"outputs": {}, "files": {"child.agraph.yaml": edited}}],
                               "c": [{"outputs": {"v": "x"}}]})
    assert run.start().status is RunStatus.FAILED
    assert run.node("sub")["status"] == "failed"
    [rt051] = [d for d in run.record()["diagnostics"] if d["code"] == "RT051"]
    assert "not the pinned integrity" in rt051["message"]
    assert [c[0] for c in run.worker.calls] == ["edit"]


def test_a_child_document_changed_while_the_run_waited_is_refused(tmp_path: Path) -> None:
    child, sub = pinned_child(tmp_path)
    data = graph({
        "hold": {"type": "gate", "title": "hold", "description": "Wait.",
                 "gate": {"mode": "approve"}},
        "sub": {**sub, "depends_on": ["hold"]},
    }, ["hold"])
    run = Run(tmp_path, data, {"c": [{"outputs": {"v": "x"}}]})
    assert run.start().status is RunStatus.AWAITING_HUMAN
    child["title"] = "changed while the run waited"
    (tmp_path / "child.agraph.yaml").write_text(yaml.safe_dump(child, sort_keys=False))
    # Continuing is held to the approval: refused before the child (or anything) runs.
    with pytest.raises(Refused) as caught:
        run.answer()
    assert caught.value.code == "RT053"
    assert "not the pinned" in caught.value.message
    assert run.worker.calls == []


def expression_graph(policy: str) -> dict[str, Any]:
    return graph({"a": task("a", outputs=out("v")), "b": task("b"), "c": task("c")}, ["a"],
                 edges=[{"from": "a", "to": "b", "kind": "conditional",
                         "when": "nodes.a.outputs.v > 3"},
                        {"from": "a", "to": "c"}],
                 policy={"on_expression_error": policy})


def test_on_expression_error_false_yields_false_with_rt062(tmp_path: Path) -> None:
    run = Run(tmp_path, expression_graph("false"),
              {"a": [{"outputs": {"v": "text"}}], "b": OK, "c": OK})
    assert run.start().status is RunStatus.SUCCEEDED
    assert states(run.record()) == {"a": "succeeded", "b": "skipped", "c": "succeeded"}
    [rt062] = [d for d in run.record()["diagnostics"] if d["code"] == "RT062"]
    assert rt062["severity"] == "warning" and "nodes.a.outputs.v > 3" in rt062["message"]


def test_edges_resolved_before_an_expression_are_written_before_what_it_writes(
        tmp_path: Path) -> None:
    """The edges out of a node are written together, but never after an expression that
    comes after them: its warning (or the failure of the run) follows what was resolved
    before it, as it was found."""
    data = graph({"a": task("a", outputs=out("v")), "b": task("b"), "c": task("c"),
                  "d": task("d")}, ["a"],
                 edges=[{"from": "a", "to": "c"}, {"from": "a", "to": "d"},
                        {"from": "a", "to": "b", "kind": "conditional",
                         "when": "nodes.a.outputs.v > 3"}],
                 policy={"on_expression_error": "false"})
    run = Run(tmp_path, data, {"a": [{"outputs": {"v": "text"}}], "b": OK, "c": OK, "d": OK})
    assert run.start().status is RunStatus.SUCCEEDED
    seen = [(e.type, e.payload.get("to") or e.payload.get("code"))
            for e in run.engine.store.events(run.run_id)
            if e.type in ("edge/resolved", "diagnostic")]
    assert seen[:4] == [("edge/resolved", "c"), ("edge/resolved", "d"),
                        ("diagnostic", "RT062"), ("edge/resolved", "b")], seen


def test_on_expression_error_fail_stops_the_run(tmp_path: Path) -> None:
    run = Run(tmp_path, expression_graph("fail"),
              {"a": [{"outputs": {"v": "text"}}], "b": OK, "c": OK})
    assert run.start().status is RunStatus.FAILED
    [rt062] = [d for d in run.record()["diagnostics"] if d["code"] == "RT062"]
    assert rt062["severity"] == "error"
    assert states(run.record()).get("b") != "succeeded"
