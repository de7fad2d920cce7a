"""``command`` criteria of a remote attempt, run on the worker that ran the attempt.

A command criterion reads the tree the attempt wrote, so with the DBOS executor it runs
where the attempt ran: the coordinator still decides when (after the outputs and the
``after_outputs`` checkpoints, in the success block's order, short-circuits included) and
records the result exactly as on one machine; only the command itself crosses. It goes as
workflow ``rein_check`` on that worker's own queue ``<queue>#<worker>``; if the worker has
died meanwhile, supervision moves it to the tree's queue, where any worker with the same tree
takes it; so does the command of an attempt that ran with ``workspace: none`` (anywhere),
since a command criterion always runs in the workspace, as on one machine. The worker checks its tree first, as for an attempt, and never runs the
command against another one.

Like an attempt's request, the payload carries the names of the node's environment variables
and secrets, never their values: the worker fills them from its own environment.

No DBOS import here: the coordinator's half (:func:`remote_commands`) and the worker's
(:func:`run_check_payload`) only build and read JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rein.core.loops import new_loop
from rein.engine.criteria import command
from rein.engine.criteria.base import CriterionProblem, Verdict
from rein.engine.criteria.model import CriterionContext
from rein.engine.executors.tree import tree_problem
from rein.engine.prepare import secrets_from_env
from rein.formats.redaction import Secrets

RemoteCommand = Callable[[Mapping[str, Any], CriterionContext], Awaitable[Verdict]]


def private_queue(queue: str, worker: str) -> str:
    """The queue only ``worker`` listens on, beside ``queue``."""
    return f"{queue}#{worker}"


def remote_commands(executor: Any, placement: Mapping[str, Any] | None
                    ) -> RemoteCommand | None:
    """Where the command criteria of an attempt placed at ``placement`` run (``None``: the
    attempt ran here, and so do they)."""
    if not placement or placement.get("executor") != "dbos" or not placement.get("workflow"):
        return None
    tree = executor.tree
    queue = str(placement.get("queue") or "").partition("~")[0]
    if "@" in queue:  # the attempt's tree queue: the very worker that ran it
        queue = private_queue(queue, str(placement.get("worker")))
    else:
        queue = executor.tree_queue()

    async def run(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
        secret_values = ctx.secret_values
        payload = json.dumps({
            "criterion": dict(criterion), "node": ctx.node_id, "attempt": ctx.attempt,
            "placement": {**tree, "access": "read_only"},
            "env_names": sorted(k for k, v in ctx.env.items() if v not in secret_values),
            "secret_names": sorted(k for k, v in ctx.env.items() if v in secret_values),
            "timeout": ctx.default_timeout_seconds}, default=str)
        workflow_id = f"{placement['workflow']}/check:{criterion.get('id')}"
        return decode_verdict(await executor.check(workflow_id, queue, payload))

    return run


def run_check_payload(payload: str, serving: Any) -> str:
    """The worker's half: check the tree, fill the environment, run the command here."""
    doc = json.loads(payload)
    problem = tree_problem(serving.workspace, serving.executor_id, doc["placement"])
    if problem is not None:
        return encode_verdict(Verdict(passed=False, error=f"not run: {problem}",
                                      error_code="SCALE007"))
    env = {k: os.environ[k] for k in doc["env_names"] if k in os.environ}
    secrets = secrets_from_env(os.environ)
    filled = {k: secrets[k] for k in doc["secret_names"] if k in secrets}
    known: Secrets = serving.secrets or Secrets()
    ctx = CriterionContext(
        workspace=serving.workspace, node_id=str(doc["node"]), attempt=int(doc["attempt"]),
        outputs={}, output_specs={}, scope=None, env={**env, **filled},
        secret_values=known.values | frozenset(filled.values()),
        default_timeout_seconds=float(doc["timeout"]))
    loop = new_loop()  # a workflow's thread has no loop of its own
    try:
        verdict = loop.run_until_complete(command.check(doc["criterion"], ctx))
    except CriterionProblem as exc:
        verdict = Verdict(passed=False, error=exc.text(), error_code=exc.code)
    finally:
        loop.close()
    return known.text(encode_verdict(verdict))


def encode_verdict(verdict: Verdict) -> str:
    return json.dumps({
        "passed": verdict.passed, "evidence": verdict.evidence,
        "evidence_truncated": verdict.evidence_truncated, "score": verdict.score,
        "error": verdict.error, "error_code": verdict.error_code,
        "failure_class": verdict.failure_class, "extra": dict(verdict.extra)}, default=str)


def decode_verdict(text: str) -> Verdict:
    doc = json.loads(text)
    return Verdict(passed=bool(doc["passed"]), evidence=doc["evidence"],
                   evidence_truncated=bool(doc["evidence_truncated"]), score=doc["score"],
                   error=doc["error"], error_code=doc["error_code"],
                   failure_class=doc["failure_class"], extra=doc["extra"])


__all__ = ["decode_verdict", "encode_verdict", "private_queue", "remote_commands",
           "run_check_payload"]
