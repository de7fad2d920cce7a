"""Continuing a run whose rein died mid-step, under ``policy.resume`` (AGS §17.9).

A run found ``running`` by a process that holds its lock was interrupted: its last rein
died without pausing or finishing it. Before it is scheduled again:

1. process groups recorded for it that outlived their rein are killed (a command criterion
   that was running when rein got ``kill -9``);
2. every attempt that was in flight is marked ``x-rein-interrupted`` in its node's record,
   with an ``attempt/interrupted`` event, so that later continuations still know it.

Then ``policy.resume`` decides: ``resume_incomplete`` (the default) adopts every terminal
node and runs the rest; ``resume_failed`` adopts only succeeded nodes, so failed ones (and
what they skipped) run again; ``restart`` discards the run and starts a new one with the
same approval. An interrupted attempt runs again under its own number, marked
``x-rein-rerun: true``, unless its node is irreversible (``x-rein-irreversible: true``) or
had passed a ``before_side_effects`` checkpoint: then a person confirms the re-run first
(an ``escalation`` approval; declining fails the attempt with ``permission_denied``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rein.core.ids import RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus
from rein.engine.events import EventType, append
from rein.store.base import NodeRow, ProcessRow, RunRow, Store, Transition
from rein.store.lineage import family
from rein.store.sql import host_name

INTERRUPTED = "x-rein-interrupted"
IRREVERSIBLE = "x-rein-irreversible"
POLICIES = ("resume_incomplete", "resume_failed", "restart")


def resume_policy(graph: Mapping[str, Any]) -> str:
    """``policy.resume`` of a graph, defaulting as AGS says."""
    value = (graph.get("policy") or {}).get("resume", "resume_incomplete")
    return value if value in POLICIES else "resume_incomplete"


def adoptable(status: NodeStatus, policy: str) -> bool:
    """Whether a node in ``status`` is taken from the store instead of run again."""
    if policy == "resume_failed":
        return status is NodeStatus.SUCCEEDED
    return status.terminal


def recover(store: Store, run: RunRow, *, now: str) -> None:
    """Stop orphaned process groups and mark in-flight attempts of an interrupted run."""
    for member in family(store, run.run_id):
        for proc in store.processes(member.run_id):
            outcome = stop_orphan(proc)
            append(store, member.run_id, EventType.PROCESS_STOPPED, {
                "pgid": proc.pgid, "outcome": outcome, "started_at": proc.started_at}, now)
            if outcome != "elsewhere":
                store.forget_process(member.run_id, proc.pgid)
        for row in store.nodes(member.run_id):
            marked = _mark_in_flight(row)
            if marked is not None:
                append(store, member.run_id, EventType.ATTEMPT_INTERRUPTED, {
                    "node": row.node_key, "attempt": marked.record["attempts"][-1]["attempt"]},
                    now, Transition(node=marked))


def _mark_in_flight(row: NodeRow) -> NodeRow | None:
    if row.status.terminal:
        return None
    attempts = list(row.record.get("attempts") or [])
    if not attempts or "status" in attempts[-1] or attempts[-1].get(INTERRUPTED):
        return None
    attempts[-1] = {**attempts[-1], INTERRUPTED: True}
    return NodeRow(run_id=row.run_id, node_key=row.node_key, node_id=row.node_id,
                   scope_path=row.scope_path, type=row.type, status=row.status, seq=row.seq,
                   record={**row.record, "attempts": attempts})


# -- process groups -------------------------------------------------------------------------


def process_ident(pid: int) -> str | None:
    """The start time of ``pid`` as the kernel counts it (``/proc/<pid>/stat`` field 22)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def stop_orphan(proc: ProcessRow, *, wait_seconds: float = 5.0) -> str:
    """Kill a recorded group if it still runs: ``killed``, ``gone`` or ``elsewhere``."""
    if proc.host != host_name():
        return "elsewhere"  # another machine's group: only that machine can stop it
    leader = process_ident(proc.pgid)
    if leader is not None and leader != proc.ident:
        return "gone"  # the id was reused by an unrelated process: ours is long gone
    try:
        os.killpg(proc.pgid, signal.SIGKILL)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        return "gone"
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline and _alive(proc.pgid):
        time.sleep(0.005)  # the signal is queued; bounded wait until the group is reaped
    return "killed"


def _alive(pgid: int) -> bool:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, 0)
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                data = stat.read_text()
            except OSError:
                continue
            fields = data[data.rindex(")") + 2:].split()
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
    return False


class GroupRecorder:
    """Records each process group a run starts, and forgets it once it is gone."""

    def __init__(self, store: Store, run_id: RunId, clock: Callable[[], str]) -> None:
        self.store = store
        self.run_id = run_id
        self.clock = clock

    def started(self, pgid: int) -> None:
        host, pid = host_name(), os.getpid()
        self.store.record_process(ProcessRow(
            run_id=self.run_id, pgid=pgid, ident=process_ident(pgid) or "", host=host,
            owner_pid=pid, started_at=self.clock()))

    def ended(self, pgid: int) -> None:
        self.store.forget_process(self.run_id, pgid)


# -- attempts -------------------------------------------------------------------------------


def was_interrupted(ctx: Any, key: str, attempt: int) -> bool:
    """Whether attempt ``attempt`` of node ``key`` was in flight when a rein died.

    Known from the mark :func:`recover` wrote, or, once the node has paused to ask about
    it, from the question in the approval queue.
    """
    row = ctx.state.memo.get(key)
    if row is not None and not row.status.terminal:
        for rec in row.record.get("attempts") or []:
            if rec.get("attempt") == attempt and rec.get(INTERRUPTED) and not rec.get("status"):
                return True
    prefix = f"rerun:{key}#{attempt}@"
    return any(k.startswith(prefix) for k in ctx.state.approvals)


async def may_rerun(ctx: Any, key: str, attempt: int, node: Mapping[str, Any], *,
                    mutating: bool) -> bool:
    """Whether an interrupted attempt may run again: yes, unless a person must confirm it
    and did not (this pauses the run until they answer)."""
    reason = confirmation_reason(node, mutating=mutating)
    return reason is None or await confirm_rerun(ctx, key, attempt, reason)


def confirmation_reason(node: Mapping[str, Any], *, mutating: bool) -> str | None:
    """Why re-running an interrupted attempt of ``node`` needs a person, or ``None``.

    ``mutating`` says whether the node's ``before_side_effects`` checkpoints are presented
    at all (they are for nodes that may write); an attempt in flight had passed them.
    """
    if node.get(IRREVERSIBLE) is True:
        return "irreversible"
    if mutating:
        for checkpoint in node.get("human") or []:
            if isinstance(checkpoint, Mapping) and checkpoint.get("at") == "before_side_effects":
                return "before_side_effects"
    return None


async def confirm_rerun(ctx: Any, key: str, attempt: int, reason: str) -> bool:
    """Ask once whether an interrupted attempt may run again; pauses until answered."""
    from rein.engine.run import approvals

    why = ("the node is marked irreversible" if reason == "irreversible"
           else "it had passed its before_side_effects checkpoint")
    row = await approvals.ask(
        ctx, key=f"rerun:{key}#{attempt}", kind=ApprovalKind.ESCALATION,
        request={"node": key, "attempt": attempt, "reason": reason, "mode": "approve",
                 "prompt": f"attempt {attempt} of {key} was interrupted by a crash and {why}; "
                           "its side effects may have happened. Run it again?"})
    return row.status is ApprovalStatus.ACCEPTED
