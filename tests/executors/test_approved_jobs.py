"""A job signed with the queue key still runs only what an approved run declares, and a
command run by a worker sees the environment it would see in process.

The signed jobs here are forged the way a holder of a stolen key would: straight into the
queue tables, naming a run that is live (paused at a gate), or none, or another digest,
with extra fields asking for more of the worker's environment and another command line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import ReinError
from rein.executors.approved import ApprovedNode, ApprovedRuns, find_node
from rein.executors.names import CHECK_WORKFLOW, WORKFLOW
from rein.executors.queue_key import QueueKey
from rein.formats.canonical import ags_digest
from rein.store.base import RunRow
from tests.executors.cluster import Cluster
from tests.executors.test_forged_jobs import AWS_KEY, DEPLOY, ended, forge, leaked
from tests.executors.test_two_workers import last_summary

pytestmark = pytest.mark.timeout(900)

WORKER_ENV = {"WHO": "here", "AWS_SECRET_ACCESS_KEY": AWS_KEY, "REIN_SECRET_DEPLOY": DEPLOY,
              "UNDECLARED": "not for commands"}
GRAPH: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "scale/approved",
    "title": "approved", "objective": "one checked node, then a gate",
    "requires_conformance": 3,
    "secrets": [{"name": "deploy", "description": "a deploy token", "required": False}],
    "entrypoints": ["w"],
    "nodes": {
        "w": {"title": "work", "description": "one item",
              "outputs": {"v": {"type": "string", "description": "done"}},
              "requirements": {"environment": ["WHO"], "secrets": ["deploy"]},
              "success": {"criteria": [{"id": "seen", "kind": "command", "run": "env | sort",
                                        "description": "the environment a check sees"}]}},
        "hold": {"type": "gate", "title": "hold", "description": "wait here",
                 "depends_on": ["w"], "gate": {"mode": "approve", "prompt": "Go on?"}}}}


def paused_run(c: Cluster, *, executor: bool) -> tuple[str, str, str]:
    """Start the graph; it stops at the gate (exit 3). ``(run id, digest, graph path)``."""
    path = c.ws / "approved.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    digest = c.rein("graph", "digest", str(path), executor=False, where=False)
    assert isinstance(digest, subprocess.CompletedProcess) and digest.returncode == 0, digest
    done = c.rein("run", str(path), "--approve", digest.stdout.strip(), "--json",
                  executor=executor, extra=WORKER_ENV)
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr + c.logs()
    return str(last_summary(done.stdout)["run_id"]), digest.stdout.strip(), str(path)


def seen(c: Cluster, run_id: str) -> str:
    """What the ``seen`` check of node ``w`` printed: the environment its command saw."""
    (result,) = c.node_rows(run_id)["w"]["attempts"][0]["success"]["results"]
    return str(json.loads(result["evidence"])["stdout"])


def signed(c: Cluster, name: str, workflow_id: str, payload: dict[str, Any]) -> str:
    """A job as a holder of the cluster's queue key writes it."""
    key = QueueKey(c.key.read_bytes().strip())
    return forge(c, name, key.sign(name, workflow_id, json.dumps(payload)),
                 workflow_id=workflow_id)


def test_a_signed_job_runs_only_what_the_approved_graph_declares(tmp_path: Path,
                                                                 db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    marker = tmp_path / "ran"
    try:
        c.worker("w1", **WORKER_ENV)
        c.workers_ready("w1")
        run_id, digest, path = paused_run(c, executor=True)

        def check(tag: str, **fields: Any) -> tuple[str, str]:
            payload = {"run": run_id, "digest": digest, "node": "w", "attempt": 1,
                       "criterion": "seen", "placement": {"access": "none"}, "timeout": 30,
                       # A key holder asking for more than the graph declares:
                       "run_command": f"touch {marker}", "env_names": ["AWS_SECRET_ACCESS_KEY"],
                       "secret_names": ["deploy"], **fields}
            return ended(c, signed(c, CHECK_WORKFLOW, f"{run_id}/w#1/check:{tag}", payload))

        approved = check("approved")
        ghost_node = check("node", node="ghost")
        ghost_criterion = check("criterion", criterion="nope")
        other_digest = check("digest", digest="sha256-" + "A" * 43 + "=")
        no_run = check("run", run="run-nobody")
        attempt, gate = (ended(c, signed(c, WORKFLOW, f"{run_id}/{node}#1", {
            "worker": "scripted", "placement": {"access": "none"}, "digest": digest,
            "request": {"run_id": run_id, "node_id": node, "attempt": 1}}))
            for node in ("ghost", "hold"))
        approved_text = Path(path).read_text()
        changed_graph = json.loads(json.dumps(GRAPH))
        changed_graph["nodes"]["w"]["description"] = "changed after approval"
        Path(path).write_text(yaml.safe_dump(changed_graph, sort_keys=False))
        changed = check("changed")
        Path(path).write_text(approved_text)
        cancelled = c.rein("runs", "cancel", run_id, executor=False)
        assert isinstance(cancelled, subprocess.CompletedProcess)
        ended_run = check("ended")
    finally:
        c.stop()
    assert not marker.exists(), "a command the job named ran"
    status, answer = approved
    assert status == "SUCCESS"
    assert "WHO=here" in answer and "UNDECLARED" not in answer and leaked(answer) == []
    for what, (status, left) in {"an unknown node": ghost_node,
                                 "an unknown criterion": ghost_criterion,
                                 "another digest": other_digest, "no run": no_run,
                                 "an attempt of an unknown node": attempt,
                                 "an attempt of a gate": gate,
                                 "a changed graph": changed}.items():
        assert (status, "SCALE012" in left) == ("ERROR", True), (what, left)
    assert cancelled.returncode == 1, cancelled.stdout + cancelled.stderr  # ended cancelled
    assert ended_run[0] == "ERROR" and "has ended" in ended_run[1], ended_run
    assert "refused job" in c.log("w1")


def test_a_check_sees_the_same_environment_on_a_worker_as_in_process(tmp_path: Path,
                                                                     db_url: str) -> None:
    local = Cluster(tmp_path / "local", db_url)
    local_run, _, _ = paused_run(local, executor=False)
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    try:
        c.worker("w1", **WORKER_ENV)
        c.workers_ready("w1")
        remote_run, _, _ = paused_run(c, executor=True)
        placement = c.node_rows(remote_run)["w"]["attempts"][0]["x-rein-placement"]
        remote = seen(c, remote_run)
    finally:
        c.stop()
    assert placement["worker"] == "w1"
    here = seen(local, local_run)
    # Both sides differ only where the workspace and its home are.
    assert remote.replace(str(tmp_path / "cluster"), "ROOT") == \
        here.replace(str(tmp_path / "local"), "ROOT")
    assert "WHO=here" in remote and "UNDECLARED" not in remote
    assert leaked(remote) == [] and "AWS_SECRET_ACCESS_KEY" not in remote


def test_a_node_key_names_the_node_the_engine_runs() -> None:
    body = {"entrypoints": ["x"], "nodes": {"x": {"title": "x", "description": "in a loop"}}}
    graph = {"subgraphs": {"body": body}, "nodes": {
        "fan": {"type": "map", "title": "fan", "description": "d", "map": {
            "over": "params.xs", "as": "i", "body": {"entrypoints": ["w"], "nodes": {
                "w": {"title": "w", "description": "item"}}}}},
        "again": {"type": "loop", "title": "l", "description": "d",
                  "loop": {"use": "body", "max_iterations": 2}},
        "a": {"title": "a", "description": "may fail"},
        "b": {"title": "b", "description": "stands in for a"}}}
    found = {key: (find_node(graph, graph, key) or {}).get("description") for key in (
        "fan[3].w", "again[1].x", "a~b", "a", "fan.w", "fan[3]", "ghost", "a~ghost",
        "ghost~b", "fan[3].w.z", "fan[3].x", "FAN[3].w", "")}
    assert found == {"fan[3].w": "item", "again[1].x": "in a loop", "a~b": "stands in for a",
                     "a": "may fail", "fan.w": None, "fan[3]": None, "ghost": None,
                     "a~ghost": None, "ghost~b": None, "fan[3].w.z": None, "fan[3].x": None,
                     "FAN[3].w": None, "": None}


def test_a_node_gets_what_its_defaults_declare_too() -> None:
    graph = {"defaults": {"requirements": {"environment": ["FROM_DEFAULTS"]}},
             "nodes": {"w": {"title": "w", "description": "d"}}}
    node = find_node(graph, graph, "w")
    assert node is not None
    approved = ApprovedNode(run_id="r", key="w", node=node)
    assert approved.environment({"FROM_DEFAULTS": "1", "OTHER": "2"}) == (
        {"FROM_DEFAULTS": "1"}, frozenset())


class RowsOnly:
    """A store double holding run rows only: what the worker's check reads of a store."""

    def __init__(self, *runs: RunRow) -> None:
        self.runs = {r.run_id: r for r in runs}

    def get_run(self, run_id: str) -> RunRow | None:
        return self.runs.get(run_id)

    def close(self) -> None:
        pass


def row(run_id: str, path: Path, digest: str, *, parent: str | None = None,
        binding: dict[str, Any] | None = None,
        status: RunStatus = RunStatus.RUNNING) -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path=str(path),
                  graph_digest=digest, status=status, started_at="2026-01-01T00:00:00Z",
                  parent_run_id=None if parent is None else RunId(parent), binding=binding)


def test_child_runs_judges_and_forced_resumes_are_checked_against_their_documents(
        tmp_path: Path) -> None:
    inline = {"entrypoints": ["c"], "nodes": {"c": {"title": "c", "description": "inline"}}}
    child = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "t/child", "title": "c",
             "objective": "o", "entrypoints": ["r"],
             "nodes": {"r": {"title": "r", "description": "referenced"}}}
    top = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "t/top", "title": "t",
           "objective": "o", "entrypoints": ["w"], "nodes": {
               "w": {"title": "w", "description": "judged", "success": {"criteria": [
                   {"id": "j", "kind": "llm_judge", "rubric": "good?"}]}},
               "sub": {"type": "subgraph", "title": "s", "description": "d",
                       "subgraph": {"inline": inline}},
               "ref": {"type": "subgraph", "title": "r", "description": "d",
                       "subgraph": {"ref": {"uri": "child.agraph.yaml"}}}}}
    top_path, child_path = tmp_path / "top.agraph.yaml", tmp_path / "child.agraph.yaml"
    top_path.write_text(yaml.safe_dump(top))
    child_path.write_text(yaml.safe_dump(child))
    d_top, d_child, d_inline = ags_digest(top), ags_digest(child), ags_digest(inline)
    binding = {"graph_digest": d_top, "approved_digest": d_top,
               "children": {str(child_path): d_child}}
    runs = RowsOnly(row("top", top_path, d_top, binding=binding),
                    row("inline", top_path, d_inline, parent="top"),
                    row("ref", child_path, d_child, parent="top"),
                    row("stray", top_path, "sha256-none", parent="top"))
    approved = ApprovedRuns(lambda: runs)

    judge = approved.node("top", d_top, "w:j")
    assert (judge.attempt_kind, judge.judge) == ("judge", {"id": "j", "kind": "llm_judge",
                                                           "rubric": "good?"})
    assert approved.node("inline", d_inline, "c").node["description"] == "inline"
    assert approved.node("ref", d_child, "r").node["description"] == "referenced"
    assert approved.node("top", d_top, "sub").attempt_kind is None  # runs no attempts

    def refused(run_id: str, digest: str, key: str) -> str:
        with pytest.raises(ReinError) as caught:
            approved.node(run_id, digest, key)
        assert caught.value.code == "SCALE012"
        return caught.value.message

    assert "no llm_judge criterion" in refused("top", d_top, "w:nope")
    assert "no node 'r'" in refused("inline", d_inline, "r")  # not the referenced document
    assert "no part of" in refused("stray", "sha256-none", "c")
    child_path.write_text(yaml.safe_dump({**child, "title": "changed"}))
    assert "not " + d_child in refused("ref", d_child, "r")
    del runs.runs["ref"]
    runs.runs["ref"] = row("ref", tmp_path / "other.agraph.yaml", d_child, parent="top")
    assert "pinned" in refused("ref", d_child, "r")

    # A forced resume rebinds the run to the files as they are; without the record, no.
    top_path.write_text(yaml.safe_dump({**top, "title": "forced"}))
    d_forced = ags_digest({**top, "title": "forced"})
    rebound = {**binding, "graph_digest": d_forced}
    runs.runs["top"] = row("top", top_path, d_top, binding=rebound)
    assert "bound to" in refused("top", d_top, "w")
    runs.runs["top"] = row("top", top_path, d_top, binding={
        **rebound, "x-rein-forced-resume": {"approved_digest": d_top}})
    assert approved.node("top", d_top, "w").node["description"] == "judged"
    runs.runs["top"] = row("top", top_path, d_top, binding={"graph_digest": d_forced})
    assert "no approval" in refused("top", d_top, "w")
    runs.runs["top"] = row("top", top_path, d_top, binding=rebound,
                           status=RunStatus.SUCCEEDED)
    assert "has ended" in refused("inline", d_inline, "c")  # the run above it ended


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is missing")
def test_where_approvals_are_signed_a_run_row_written_into_the_database_approves_nothing(
        tmp_path: Path) -> None:
    """The worker's own allowed signers: a run whose approval is signed by the person runs;
    the same row with the graph swapped for one nobody signed, or copied under another id,
    or with no signature at all, is refused before anything runs."""
    from rein.config.signing import sign
    from rein.engine.run.signed import (
        SIGNATURE,
        Signers,
        approval_check,
        run_message,
        signature_record,
    )

    key = tmp_path / "ana"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"ana {Path(f'{key}.pub').read_text().strip()}\n")
    signers = Signers(str(allowed))
    graph, mine = tmp_path / "g.agraph.yaml", tmp_path / "mine.agraph.yaml"
    graph.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    other = {**GRAPH, "nodes": {"w": {**GRAPH["nodes"]["w"], "description": "mine"}}}
    mine.write_text(yaml.safe_dump(other, sort_keys=False))
    d_graph, d_mine = ags_digest(GRAPH), ags_digest(other)
    core = {"graph_digest": d_graph, "params": {}, "children": {}}
    message = run_message("run-a", core)
    signature = sign(str(key), message)
    signed = {**core, "approved_digest": d_graph, SIGNATURE: signature_record(
        "run-a", signers.check("ana", message, signature), signature)}
    swapped = {**signed, "graph_digest": d_mine, "approved_digest": d_mine}
    runs = RowsOnly(row("run-a", graph, d_graph, binding=signed),
                    row("run-b", graph, d_graph, binding=signed),
                    row("run-d", graph, d_graph, binding={**core, "approved_digest": d_graph}))
    approved = ApprovedRuns(lambda: runs, approval_problem=approval_check(signers, tmp_path))
    assert approved.node("run-a", d_graph, "w").node["description"] == "one item"
    assert ApprovedRuns(lambda: runs).node("run-d", d_graph, "w").node  # unsigned: as before

    def refused(run_id: str, digest: str) -> str:
        with pytest.raises(ReinError) as caught:
            approved.node(run_id, digest, "w")
        assert caught.value.code == "SCALE012"
        return caught.value.message

    assert "signed for run run-a, not this one" in refused("run-b", d_graph)
    assert "no person's signature approves it" in refused("run-d", d_graph)
    runs.runs["run-a"] = row("run-a", mine, d_mine, binding=swapped)
    assert "is not a signature of this very content" in refused("run-a", d_mine)
