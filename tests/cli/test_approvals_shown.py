"""What a person reads to decide an approval is the content the approval binds.

A gate shows a graph file (as the development flow's plan approval does). Whoever can
write the workspace can put other content in the file while the person reads it and the
approved content back before the accept, which the accept then takes as unchanged. So
`rein approvals show` draws the plan from the copy the approval keeps, and `rein graph
plan FILE` says that the file it drew is not what the pending approval asks to accept.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from rein.cli import main
from tests.scenarios.harness import Scenario

PLAN = "plan.agraph.yaml"


def _graph(graph_id: str, node: str, title: str) -> str:
    return yaml.safe_dump({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": graph_id, "title": graph_id,
        "objective": title, "constraints": {"max_cost_usd": 1.0}, "entrypoints": [node],
        "nodes": {node: {"title": title, "description": f"{title}."}}}, sort_keys=False)


APPROVED = _graph("tests/approved", "wipe", "Wipe the production database")
BENIGN = _graph("tests/benign", "tidy", "Tidy the documentation")
GATE = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/plan-gate", "title": "gate",
    "objective": "a person approves the plan", "constraints": {"max_cost_usd": 1.0},
    "entrypoints": ["approve"],
    "nodes": {"approve": {
        "type": "gate", "title": "approve", "description": f"A person approves {PLAN}.",
        "gate": {"mode": "approve", "on_reject": "fail", "present": [repr(PLAN)],
                 "prompt": f"Build {PLAN}? Review it with `rein graph plan {PLAN}`."}}},
}


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
            ) -> tuple[Scenario, str]:
    """A run waiting at a gate that shows the plan file, approved content in it."""
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    root = tmp_path / "ws"
    root.mkdir()
    scenario = Scenario(root, monkeypatch, capsys)
    scenario.file(PLAN, APPROVED)
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATE, sort_keys=False))
    scenario.answers({"nodes": {}})
    code, out = scenario.run("g.agraph.yaml")
    assert code == 3, out
    [pending] = scenario.pending()
    return scenario, str(pending["approval_id"])


def _rein(scenario: Scenario, *args: str) -> tuple[int, str, str]:
    scenario.capsys.readouterr()
    code = main(list(args))
    got = scenario.capsys.readouterr()
    return code, got.out, got.err


def test_the_swap_is_seen_through_rein_approvals_show(waiting: tuple[Scenario, str]) -> None:
    """The agent puts benign content in the file while the person reads, and the approved
    content back before the accept: the person reading through rein reads the approved
    content, and is told that the file holds other content meanwhile."""
    scenario, approval = waiting
    scenario.file(PLAN, BENIGN)
    code, out, _ = _rein(scenario, "approvals", "show", approval)
    assert code == 0
    assert "Wipe the production database" in out and "Tidy" not in out
    assert f"{PLAN} as it was presented ({_sha(APPROVED)}), the plan an accept approves:" \
        in out
    assert f"{_sha(APPROVED)}  CHANGED since it was presented (now {_sha(BENIGN)})" in out
    scenario.file(PLAN, APPROVED)  # put back before the accept
    code, out, _ = _rein(scenario, "approvals", "show", approval)
    assert f"{_sha(APPROVED)}  unchanged since it was presented" in out
    assert "Wipe the production database" in out
    code, _, _ = _rein(scenario, "approvals", "accept", approval)
    assert code == 0  # the person accepted what they were shown


def test_rein_graph_plan_warns_that_the_file_is_not_what_the_approval_binds(
        waiting: tuple[Scenario, str]) -> None:
    scenario, approval = waiting
    scenario.file(PLAN, BENIGN)
    code, out, err = _rein(scenario, "graph", "plan", PLAN)
    assert code == 0 and "Tidy the documentation" in out  # the file as it is, drawn
    assert (f"{PLAN}: warning APPROVAL008: this is not what approval {approval} asks you to "
            f"accept: its content is {_sha(APPROVED)}, and the file drawn here is "
            f"{_sha(BENIGN)}") in err
    assert f"`rein approvals show {approval}`" in err
    code, out, _ = _rein(scenario, "graph", "plan", "--json", PLAN)
    data = json.loads(out)
    assert data["content_digest"] == _sha(BENIGN)
    assert data["approvals"] == [{"approval_id": approval, "binds": "content",
                                  "digest": _sha(APPROVED), "drawn": _sha(BENIGN),
                                  "same": False, "code": "APPROVAL008"}]
    # The approved content back: the plan drawn is what the approval asks to accept.
    scenario.file(PLAN, APPROVED)
    code, out, err = _rein(scenario, "graph", "plan", PLAN)
    assert code == 0 and "APPROVAL008" not in err
    assert (f"approval {approval} asks you to accept exactly what is drawn here (content "
            f"{_sha(APPROVED)})") in err
    code, out, _ = _rein(scenario, "graph", "plan", "--format", "mermaid", PLAN)
    assert code == 0 and "approval" not in out  # a picture stays a picture


def test_a_graph_plan_outside_any_workspace_store_says_nothing_of_approvals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / PLAN).write_text(APPROVED)
    assert main(["graph", "plan", PLAN]) == 0
    assert "approval" not in capsys.readouterr().err
    assert main(["graph", "plan", "--json", PLAN]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["approvals"] == [] and data["content_digest"] == _sha(APPROVED)
    assert not (tmp_path / ".rein").exists()  # nothing created to look


def test_show_file_prints_the_copy_the_approval_keeps(waiting: tuple[Scenario, str]) -> None:
    scenario, approval = waiting
    scenario.file(PLAN, BENIGN)
    code, out, _ = _rein(scenario, "approvals", "show", approval, "--file", PLAN)
    assert code == 0 and out == APPROVED
    code, out, _ = _rein(scenario, "approvals", "show", approval, "--file", PLAN, "--json")
    assert json.loads(out) == {"approval_id": approval, "file": PLAN,
                               "digest": _sha(APPROVED), "text": APPROVED}
    code, _, err = _rein(scenario, "approvals", "show", approval, "--file", "g.agraph.yaml")
    assert code == 1
    assert f"APPROVAL009: approval {approval} does not show a file 'g.agraph.yaml'" in err
    assert f"hint: it shows {PLAN}" in err and "Traceback" not in err


def test_the_json_of_show_and_list(waiting: tuple[Scenario, str]) -> None:
    """The copies are printed by `show` only; the listing's request keeps the digests."""
    scenario, approval = waiting
    [listed] = scenario.pending()
    assert "contents" not in listed["request"]
    assert listed["request"]["files"] == {PLAN: _sha(APPROVED)}
    scenario.file(PLAN, BENIGN)
    code, out, _ = _rein(scenario, "approvals", "show", approval, "--json")
    assert code == 0
    data = json.loads(out)
    assert "contents" not in data["request"]
    [view] = data["files"]
    assert {k: view[k] for k in ("file", "digest", "now", "changed", "copy", "text")} == {
        "file": PLAN, "digest": _sha(APPROVED), "now": _sha(BENIGN), "changed": True,
        "copy": "intact", "text": APPROVED}
    assert view["plan"]["plan"]["graph_id"] == "tests/approved"


def test_a_copy_edited_in_the_store_is_not_shown_as_the_approved_content(
        waiting: tuple[Scenario, str]) -> None:
    scenario, approval = waiting
    with sqlite3.connect(scenario.root / ".rein" / "rein.db") as db:
        [(text,)] = db.execute("SELECT request FROM approvals WHERE approval_id = ?",
                               (approval,)).fetchall()
        request = json.loads(text)
        request["contents"][PLAN] = BENIGN  # the digest in files stays the approved one
        db.execute("UPDATE approvals SET request = ? WHERE approval_id = ?",
                   (json.dumps(request), approval))
    code, out, _ = _rein(scenario, "approvals", "show", approval)
    assert code == 0 and "Tidy" not in out
    assert (f"warning APPROVAL009: the copy of {PLAN} this approval keeps is not the "
            f"content it binds ({_sha(APPROVED)})") in out
    code, _, err = _rein(scenario, "approvals", "show", approval, "--file", PLAN)
    assert code == 1 and "APPROVAL009" in err and "its copy is not the content" in err


def _row(request: dict[str, Any], digest: str) -> Any:
    from rein.core.ids import ApprovalId, RunId
    from rein.core.states import ApprovalKind, ApprovalStatus
    from rein.store.base import ApprovalRow

    return ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=RunId("turn-1"),
                       key=f"graph:{digest}", kind=ApprovalKind.GRAPH,
                       status=ApprovalStatus.PENDING, digest=digest, request=request,
                       created_at="2026-01-01T00:00:00Z")


def test_graph_plan_names_a_turn_question_by_the_graph_digest(tmp_path: Path) -> None:
    from rein.cli.approval_shown import binding_text, bindings

    graph = tmp_path / "g.agraph.yaml"
    row = _row({"graph": str(graph), "turn": "turn-1", "thread": "thr-1"}, "sha256-asked")
    [found] = bindings([row], tmp_path, graph, content="sha256:bytes", graph="sha256-drawn")
    assert (found.what, found.binds, found.drawn, found.same) == \
        ("graph", "sha256-asked", "sha256-drawn", False)
    assert "its graph digest is sha256-asked, and the file drawn here is sha256-drawn" in \
        binding_text(found, "g.agraph.yaml")
    assert bindings([row], tmp_path, tmp_path / "other.agraph.yaml", content="sha256:b",
                    graph="sha256-asked") == []


def test_show_draws_a_turn_question_from_the_plan_its_turn_recorded() -> None:
    from rein.cli.approval_shown import turn_plan

    recorded = {"id": "g", "digest": "sha256-asked", "plan": "Plan: g\n"}

    class Turn:
        turn_id = "turn-1"
        input: ClassVar[dict[str, Any]] = {"plan": recorded}

    class Store:
        def thread_turns(self, thread: str) -> list[Turn]:
            assert thread == "thr-1"
            return [Turn()]

    class Harness:
        store = Store()

    row = _row({"graph": "/g.agraph.yaml", "turn": "turn-1", "thread": "thr-1"},
               "sha256-asked")
    assert turn_plan(Harness(), row) == recorded
    other = _row(dict(row.request), "sha256-else")
    assert turn_plan(Harness(), other) is None  # not the plan of the digest asked about
