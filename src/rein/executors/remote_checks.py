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
(the command criterion's) and the variables and secrets the node declares, filled from the
worker's own environment. Nothing else of the worker's environment reaches it.

No DBOS import here, and nothing of the engine: the coordinator's half
(:func:`remote_commands`) sends the job and hands the engine the verdict's JSON document;
the worker's (:func:`run_check`) runs the command through the engine's own check, handed
to :func:`~rein.executors.serving.serve` as a :class:`CommandCheck`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from rein.core.loops import new_loop
from rein.executors.approved import ApprovedNode
from rein.executors.tree import tree_problem
from rein.formats.redaction import Secrets

# The coordinator's half: (the criterion, the engine's criterion context) -> the verdict as
# a JSON document (the engine reads it back).
RemoteCommand = Callable[[Mapping[str, Any], Any], Awaitable[Mapping[str, Any]]]


class CommandCheck(Protocol):
    """The engine's own check of a ``command`` criterion, as the worker runs it: the verdict
    as a JSON document (``rein.engine.run.criteria.remote.check_command``)."""

    def __call__(self, criterion: Mapping[str, Any], *, workspace: Path, node_key: str,
                 attempt: int, env: Mapping[str, str], secret_values: frozenset[str],
                 timeout: float) -> Awaitable[Mapping[str, Any]]: ...


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

    async def run(criterion: Mapping[str, Any], ctx: Any) -> Mapping[str, Any]:
        workflow = str(placement["workflow"])
        run_id = workflow.partition("/")[0]
        payload = json.dumps({
            "run": run_id, "digest": executor.digest_of(run_id), "node": ctx.node_id,
            "attempt": ctx.attempt, "criterion": str(criterion.get("id")),
            "placement": {**tree, "access": "read_only"},
            "timeout": ctx.default_timeout_seconds}, default=str)
        workflow_id = f"{workflow}/check:{criterion.get('id')}"
        document: Mapping[str, Any] = json.loads(
            await executor.check(workflow_id, queue, payload))
        return document

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
    criterion the job names, with the node's environment filled from ``env``, through the
    engine's check (``serving.check_command``); the verdict as JSON text, secrets redacted."""
    problem = tree_problem(serving.workspace, serving.executor_id, doc["placement"])
    if problem is not None:
        return json.dumps({"passed": False, "error": f"not run: {problem}",
                           "error_code": "SCALE007"})
    criterion = node.command_criterion(str(doc["criterion"]))
    declared, secret_names = node.environment(env)
    known: Secrets = serving.secrets or Secrets()
    check: CommandCheck = serving.check_command
    loop = new_loop()  # a workflow's thread has no loop of its own
    try:
        verdict = loop.run_until_complete(check(
            criterion, workspace=serving.workspace, node_key=node.key,
            attempt=int(doc["attempt"]), env=check_env(declared, env),
            secret_values=known.values | frozenset(declared[n] for n in secret_names),
            timeout=float(doc["timeout"])))
    finally:
        loop.close()
    return known.text(json.dumps(verdict, default=str))


def check_env(declared: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """A command criterion's environment as the engine builds it in process
    (``criterion_context``): ``PATH``, then what the node declares; the command runner adds
    the host baseline."""
    return {**({"PATH": env["PATH"]} if "PATH" in env else {}), **declared}


__all__ = ["CommandCheck", "RemoteCommand", "check_env", "check_target", "private_queue",
           "remote_commands", "run_check"]
