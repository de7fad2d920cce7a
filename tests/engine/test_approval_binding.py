"""Every continuation of a run is held to what was approved (RT053): the graph, its params and
every referenced child document, whoever continues it and however."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.states import ApprovalStatus, RunStatus
from rein.engine.run.approvals import record_answer
from rein.errors import Refused
from tests.scenarios.build import Run, graph, out, task

GATE = {"type": "gate", "title": "hold", "description": "Wait.", "gate": {"mode": "approve"}}


def child_doc(title: str = "child") -> dict[str, Any]:
    child = graph({"c": task("c", outputs=out("v"))}, ["c"],
                  outputs={"v": {"type": "string", "description": "v",
                                 "from": "nodes.c.outputs.v"}})
    return {**child, "id": "tests/child", "title": title}


def write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def gated_with_child(tmp_path: Path) -> Run:
    write(tmp_path / "child.agraph.yaml", child_doc())
    data = graph({
        "hold": GATE,
        "sub": {"type": "subgraph", "title": "sub", "description": "Child.",
                "depends_on": ["hold"], "subgraph": {"ref": {"uri": "child.agraph.yaml"}}},
    }, ["hold"])
    run = Run(tmp_path, data, {"c": [{"outputs": {"v": "x"}}]})
    assert run.start().status is RunStatus.AWAITING_HUMAN
    return run


def answer_in_store(run: Run) -> None:
    [row] = run.pending()
    record_answer(run.engine.store, row, ApprovalStatus.ACCEPTED, {"actor": "ann"},
                  run.engine.now())


@pytest.mark.parametrize("edit", ["graph", "child"])
def test_proceed_refuses_a_run_whose_approved_files_changed(tmp_path: Path, edit: str) -> None:
    run = gated_with_child(tmp_path)
    if edit == "child":
        write(tmp_path / "child.agraph.yaml", child_doc("edited while the run waited"))
    else:
        data = yaml.safe_load(run.path.read_text())
        write(run.path, {**data, "title": "edited while the run waited"})
    answer_in_store(run)
    with pytest.raises(Refused) as caught:
        asyncio.run(run.engine.proceed(run.run_id))
    assert caught.value.code == "RT053"
    assert ("children" if edit == "child" else "graph_digest") in caught.value.message
    assert run.worker.calls == []
    assert run.engine.store.get_run(run.run_id).status is RunStatus.AWAITING_HUMAN


def test_cancel_refuses_before_recording_when_the_graph_changed(tmp_path: Path) -> None:
    run = gated_with_child(tmp_path)
    write(tmp_path / "child.agraph.yaml", child_doc("edited"))
    with pytest.raises(Refused) as caught:
        asyncio.run(run.engine.cancel(run.run_id, actor="ann"))
    assert caught.value.code == "RT053"
    types = [e.type for e in run.engine.store.events(run.run_id)]
    assert "run/cancel_requested" not in types


def test_a_forced_continuation_is_recorded_and_binds_the_files_as_they_are(
        tmp_path: Path) -> None:
    run = gated_with_child(tmp_path)
    write(tmp_path / "child.agraph.yaml", child_doc("edited"))
    answer_in_store(run)
    assert asyncio.run(run.engine.proceed(run.run_id, force=True)).status is RunStatus.SUCCEEDED
    forced = run.record()["metadata"]["x-rein-forced-resume"]
    assert forced["changed"] == ["children"]
    # Bound to what was forced through: continuing again needs no second override.
    assert run.engine.check_binding(run.engine.store.get_run(run.run_id), force=False) is None


def test_a_child_edited_by_node_work_during_the_run_does_not_run(tmp_path: Path) -> None:
    write(tmp_path / "child.agraph.yaml", child_doc())
    edited = yaml.safe_dump(child_doc("rewritten by the node before it"), sort_keys=False)
    data = graph({
        "edit": task("edit", requirements={"workspace": "read_write",
                                           "permissions": ["fs:write:child.agraph.yaml"]}),
        "sub": {"type": "subgraph", "title": "sub", "description": "Child.",
                "depends_on": ["edit"], "subgraph": {"ref": {"uri": "child.agraph.yaml"}}},
    }, ["edit"])
    run = Run(tmp_path, data, {"edit": [{"outputs": {}, "files": {"child.agraph.yaml": edited}}],
                               "c": [{"outputs": {"v": "x"}}]})
    assert run.start().status is RunStatus.FAILED
    assert [c[0] for c in run.worker.calls] == ["edit"]  # the edited child never ran
    [rt053] = [d for d in run.record()["diagnostics"] if d["code"] == "RT053"]
    assert "approved with sha256-" in rt053["message"]


def test_a_graph_edited_between_approval_and_start_does_not_run(tmp_path: Path) -> None:
    from rein.engine.run.runner import prepare

    data = graph({"a": task("a")}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {}}]})
    prepared = prepare(run.path, given={}, router=run.engine.router, env=run.engine.env)
    write(run.path, graph({"a": task("a", description="Do something else.")}, ["a"]))
    with pytest.raises(Refused) as caught:
        asyncio.run(run.engine.start(prepared, approved=prepared.digest))
    assert caught.value.code == "RT053"
    assert run.worker.calls == []
    assert run.engine.store.list_runs() == []  # refused before the run was written
