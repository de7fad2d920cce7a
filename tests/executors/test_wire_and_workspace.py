"""What crosses the queue (names of secrets, never their values) and which attempts a
worker takes (only those of the tree it has)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rein.core.failures import FailureClass
from rein.core.usage import Budget, Usage
from rein.executors.approved import ApprovedNode
from rein.executors.wire import (
    decode_answer,
    decode_request,
    encode_answer,
    encode_request,
)
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    Feedback,
    Item,
    ItemKind,
    OutputSpec,
)


def request() -> AttemptRequest:
    return AttemptRequest(
        run_id="run-1", node_id="fan[3].w", attempt=2, kind="task", title="t", brief="b",
        inputs={"x": 3}, outputs=(OutputSpec(name="v", type="string", description="d"),),
        permissions=("fs:read",), tools=("read",), workspace="/srv/ws",
        env={"LANG_X": "coordinator-value", "token": "s3cret-value"},
        secret_names=frozenset({"token"}), budget=Budget(max_tool_calls=5),
        feedback=Feedback(failure_class=FailureClass.CRITERIA_FAILED, summary="again",
                          failed_criteria=({"id": "c1"},)))


def test_no_environment_crosses_the_queue_and_the_worker_fills_the_declared() -> None:
    text = encode_request(request(), worker="scripted", placement={"access": "read_only"},
                          digest="sha256-d")
    for crossed in ("s3cret-value", "coordinator-value", "LANG_X", '"token"'):
        assert crossed not in text
    job = decode_request(text)
    assert (job.worker, job.placement, job.digest) == ("scripted", {"access": "read_only"},
                                                       "sha256-d")
    assert job.request.env == {} and job.request.secret_names == frozenset()
    # The worker gives the attempt what the approved node declares, from its environment.
    node = ApprovedNode(run_id="run-1", key="fan[3].w", node={"requirements": {
        "environment": ["LANG_X"], "secrets": ["token"], "permissions": ["fs:read"],
        "tools": ["read"]}})
    got = node.narrow(job.request, {"LANG_X": "worker-value", "OTHER": "not declared",
                                    "REIN_SECRET_TOKEN": "worker-secret",
                                    "REIN_SECRET_ELSE": "not declared"})
    assert got.env == {"LANG_X": "worker-value", "token": "worker-secret"}
    assert got.secret_names == frozenset({"token"})
    want = request()
    for field in ("run_id", "node_id", "attempt", "inputs", "outputs", "budget", "feedback",
                  "permissions", "tools"):
        assert getattr(got, field) == getattr(want, field), field


def test_a_job_only_narrows_what_the_approved_node_grants() -> None:
    job = request().replace(permissions=("fs:read", "shell:exec"), tools=("read", "shell"),
                            workspace_access="read_write", network="full",
                            profile="/elsewhere/agent.yaml", worker="command/other",
                            constraints={"temperature": 2})
    node = ApprovedNode(run_id="run-1", key="w", node={"requirements": {
        "permissions": ["fs:read"], "tools": [{"name": "read"}], "workspace": "read_only"},
        "x-rein-profile": "reviewer", "constraints": {"temperature": 0}})
    got = node.narrow(job, {})
    assert (got.permissions, got.tools) == (("fs:read",), ("read",))
    assert (got.workspace_access, got.network) == ("read_only", "none")
    assert (got.profile, got.worker, got.constraints) == ("reviewer", None, {"temperature": 0})
    judge = ApprovedNode(run_id="run-1", key="w:j", node=node.node, judge={"id": "j"})
    got = judge.narrow(job, {"REIN_SECRET_TOKEN": "s"})
    assert (got.permissions, got.tools, got.profile, got.env) == ((), (), None, {})


def test_an_answer_round_trips() -> None:
    result = AttemptResult(outputs={"v": "ok"}, usage=Usage(input_tokens=3, tool_calls=1),
                           failure=FailureClass.TRANSIENT, message="m", extra={"x-a": 1})
    items, back, about = decode_answer(encode_answer(
        [Item(kind=ItemKind.MESSAGE, data={"text": "hi"})], result, worker="w1", rerun=True))
    assert back == result
    assert items == [Item(kind=ItemKind.MESSAGE, data={"text": "hi"})]
    assert about == {"worker": "w1", "rerun": True}


def git_tree(path: Path, message: str) -> None:
    git = ["git", "-C", str(path), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", message], check=True)


def test_a_worker_takes_only_the_attempts_of_its_own_tree(tmp_path: Path) -> None:
    dbos = pytest.importorskip("rein.executors.serving",
                               reason="the scale extra is not installed")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    git_tree(a, "one")
    git_tree(b, "two")
    queues_a, note = dbos.listening_queues("rein", a)
    queues_b, _ = dbos.listening_queues("rein", b)
    assert queues_a[0] == queues_b[0] == "rein"  # workspace: none attempts, anywhere
    assert queues_a[1] != queues_b[1]  # another tree is another queue: never taken
    assert "taking its attempts" in note
    # The tree moved after the worker began to listen: the attempt is not run there.
    dbos.SERVING.workspace, dbos.SERVING.executor_id = b, "wb"
    placement = {**dbos.tree_of(a), "access": "read_only"}
    problem = dbos.workspace_problem(placement)
    assert problem is not None and "wb has workspace" in problem
    job = decode_request(encode_request(request(), worker="scripted", placement=placement))
    node = ApprovedNode(run_id="run-1", key="fan[3].w", node={})
    answer = json.loads(dbos.run_job(job, node, rerun=False))
    assert answer["result"]["failure"] == "transient" and answer["result"]["outputs"] == {}
    assert dbos.workspace_problem({"access": "none"}) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write a read-only directory")
def test_a_worker_without_a_writable_workspace_takes_only_workspace_none(
        tmp_path: Path) -> None:
    dbos = pytest.importorskip("rein.executors.serving",
                               reason="the scale extra is not installed")
    git_tree(tmp_path, "one")
    tmp_path.chmod(0o555)
    try:
        queues, note = dbos.listening_queues("rein", tmp_path)
    finally:
        tmp_path.chmod(0o755)
    assert queues == ["rein"] and "not writable" in note


def test_a_commit_after_the_last_check_is_seen(tmp_path: Path) -> None:
    dbos = pytest.importorskip("rein.executors.serving",
                               reason="the scale extra is not installed")
    git_tree(tmp_path, "one")
    before = dbos.tree_of(tmp_path)["head"]
    assert dbos.tree_of(tmp_path)["head"] == before  # read again from the cache
    git_tree(tmp_path, "two")
    after = dbos.tree_of(tmp_path)["head"]
    assert after != before and len(after) == 40
