"""``command`` criteria of a remote attempt, run on the worker that ran the attempt.

A command criterion reads the tree the attempt wrote, so with the DBOS executor it runs
where the attempt ran: the coordinator still decides when (after the outputs and the
``after_outputs`` checkpoints, in the success block's order, short-circuits included) and
records the result exactly as on one machine; only the command itself crosses. It goes as
workflow ``rein_check`` on that worker's own queue ``<queue>#<worker>``; if the worker has
died meanwhile, supervision moves it to the tree's queue, where any worker with the same tree
takes it; so does the command of an attempt that ran with ``workspace: none`` (anywhere),
since a command criterion always runs in the workspace, as on one machine. The worker checks
its tree first, as for an attempt, and never runs the command against another one.

Only the criterion's id crosses, with the run, the node, the attempt and the digest the run
was started under, signed with the queue key like every job. The worker takes the command
line from the approved graph (:mod:`rein.executors.approved`), never from the job,
and runs it with the environment the engine gives it in process: the host baseline
(:data:`~rein.engine.run.criteria.command.BASELINE_ENV`) and the variables and secrets the node
declares, filled from the worker's own environment. Nothing else of the worker's
environment reaches it.

No DBOS import here: the coordinator's half (:func:`remote_commands`) and the worker's
(:func:`run_check`) only build and read JSON.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rein.core.loops import new_loop
from rein.engine.run.criteria import command
from rein.engine.run.criteria.base import CriterionProblem, Verdict
from rein.engine.run.criteria.model import CriterionContext
from rein.executors.approved import ApprovedNode
from rein.executors.tree import tree_problem
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
        workflow = str(placement["workflow"])
        run_id = workflow.partition("/")[0]
        payload = json.dumps({
            "run": run_id, "digest": executor.digest_of(run_id), "node": ctx.node_id,
            "attempt": ctx.attempt, "criterion": str(criterion.get("id")),
            "placement": {**tree, "access": "read_only"},
            "timeout": ctx.default_timeout_seconds}, default=str)
        workflow_id = f"{workflow}/check:{criterion.get('id')}"
        return decode_verdict(await executor.check(workflow_id, queue, payload))

    return run


def check_target(text: str) -> tuple[dict[str, Any], str, str, str]:
    """A check job's ``(doc, run id, digest, node key)``, read once its MAC verified; a
    field missing or of the wrong type raises here, before anything else."""
    doc = json.loads(text)
    doc = {**doc, "attempt": int(doc["attempt"]), "timeout": float(doc["timeout"]),
           "criterion": str(doc["criterion"]), "placement": dict(doc["placement"])}
    return doc, str(doc["run"]), str(doc["digest"]), str(doc["node"])


def run_check(doc: Mapping[str, Any], node: ApprovedNode, serving: Any,
              env: Mapping[str, str]) -> str:
    """The worker's half: check the tree, then run the approved graph's command for the
    criterion the job names, with the node's environment filled from ``env``."""
    problem = tree_problem(serving.workspace, serving.executor_id, doc["placement"])
    if problem is not None:
        return encode_verdict(Verdict(passed=False, error=f"not run: {problem}",
                                      error_code="SCALE007"))
    criterion = node.command_criterion(str(doc["criterion"]))
    declared, secret_names = node.environment(env)
    known: Secrets = serving.secrets or Secrets()
    ctx = CriterionContext(
        workspace=serving.workspace, node_id=node.key, attempt=int(doc["attempt"]),
        outputs={}, output_specs={}, scope=None, env=check_env(declared, env),
        secret_values=known.values | frozenset(declared[n] for n in secret_names),
        default_timeout_seconds=float(doc["timeout"]))
    loop = new_loop()  # a workflow's thread has no loop of its own
    try:
        verdict = loop.run_until_complete(command.check(criterion, ctx))
    except CriterionProblem as exc:
        verdict = Verdict(passed=False, error=exc.text(), error_code=exc.code)
    finally:
        loop.close()
    return known.text(encode_verdict(verdict))


def check_env(declared: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """A command criterion's environment as the engine builds it in process
    (``criterion_context``): ``PATH``, then what the node declares; the command runner adds
    the host baseline."""
    return {**({"PATH": env["PATH"]} if "PATH" in env else {}), **declared}


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


__all__ = ["check_env", "check_target", "decode_verdict", "encode_verdict", "private_queue",
           "remote_commands", "run_check"]
