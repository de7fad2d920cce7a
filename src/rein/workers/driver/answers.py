"""What ``rein next`` answers, built from what the store holds: one function per kind of
answer, taking plain values, so that the two reads that decide it give the same answer to
the byte. :func:`rein.workers.driver.status.status_of` (behind the Harness) reads the
store's rows; :mod:`rein.workers.driver.glance` (a cold turn's read) reads the tables.

Imports nothing beyond two small modules: a cold turn imports this one.
"""

from __future__ import annotations

from rein.core.flows import continued_by
from rein.workers.driver.places import INBOX

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any, Protocol

    class Pending(Protocol):
        """A pending driver turn, as far as an answer names it (a store row has more)."""

        @property
        def token(self) -> str: ...
        @property
        def root_run_id(self) -> str: ...
        @property
        def node_key(self) -> str: ...
        @property
        def instruction(self) -> Mapping[str, Any]: ...

# rein.errors.ExitCode's values, as plain ints (that module imports `enum` and the error
# tree); tests/workers/driver/test_glance.py holds them equal.
EXIT_OK, EXIT_FAILURE, EXIT_WAITING = 0, 1, 3
# rein.core.states.RunStatus: the statuses of a run that has not ended.
UNFINISHED = ("running", "waiting", "awaiting_human")


def base_of(run_id: str, graph_id: str, run_status: str) -> dict[str, Any]:
    """The fields every answer starts with."""
    return {"run_id": run_id, "graph_id": graph_id, "run_status": run_status}


def done(base: Mapping[str, Any]) -> dict[str, Any]:
    """The run succeeded; a run of a flow says which command goes on with the flow."""
    root = base["run_id"]
    out = {"status": "done", **base, "reason": "done", "exit_code": EXIT_OK,
           "message": f"run {root} succeeded"}
    flow = continued_by(base["graph_id"])
    if flow is not None:  # one run of a flow: the flow's own command goes on from here
        name, command = flow
        out["next"] = command
        # Whether the flow is done only its command knows (the last feature's run ends
        # it; the planning run does not): it is asked, never assumed either way.
        out["message"] += (f"; it is one run of the {name} flow: run `{command}` for what "
                           "comes next (or that the flow is done)")
    return out


def stopped(base: Mapping[str, Any], reason: str, message: str) -> dict[str, Any]:
    """The run ended without succeeding, for ``reason``."""
    return {"status": "stopped", **base, "reason": reason, "message": message,
            "exit_code": EXIT_FAILURE}


def cancelled(root: str) -> tuple[str, str]:
    """``(reason, message)`` of a cancelled run."""
    return "cancelled", f"run {root} was cancelled (see `rein runs show` for who and why)"


def instruction(base: Mapping[str, Any], turn: Pending, queue: Sequence[Pending]
                ) -> dict[str, Any]:
    """The run's pending instruction; or, when another instruction of the workspace was
    handed out first, a wait for that one (one at a time, so each one's writes can be told
    apart)."""
    root = base["run_id"]
    if queue and queue[0].token != turn.token:
        first = queue[0]  # only --run names a run whose instruction is not the current one
        return {"status": "waiting", **base, "for": "driver", "current": {
                    "token": first.token, "run_id": first.root_run_id, "node": first.node_key},
                "message": f"instruction {first.token} ({first.node_key} of run "
                           f"{first.root_run_id}) is current in this workspace: answer it "
                           f"first (`rein next --run {first.root_run_id}`); one instruction "
                           "at a time, so that each one's writes can be told apart",
                "exit_code": EXIT_WAITING}
    # Exit 0: an instruction for the caller is the normal turn of the loop, not a failure
    # (an agent shows a non-zero exit to its model as a failed command). 3 stays for a wait
    # on someone else.
    out = {"status": "instruction", **base, **dict(turn.instruction),
           "respond": f"write the envelope (it must validate against respond_with) to "
                      f"{INBOX}, then run `rein submit`; `rein submit -` reads stdin",
           "exit_code": EXIT_OK}
    later = [t for t in queue if t.token != turn.token]
    if later:  # handed out one at a time, after this one is answered
        out["also_pending"] = [t.node_key if t.root_run_id == root
                               else f"{t.node_key} (run {t.root_run_id})" for t in later]
    return out


def approvals(base: Mapping[str, Any],
              pending: Iterable[tuple[str, str, Mapping[str, Any], bool]]) -> dict[str, Any]:
    """A wait for a person: the pending approvals of the run's family, each
    ``(approval id, kind, request, awaited)``, with the commands that answer it.
    ``awaited``: a node of the run waits for it (its node has not ended, or it asks about
    the whole graph). Those come first, in the queue's order, so that the message names
    one the run waits for, never one left behind by a node that has ended."""
    items: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    for approval_id, kind, request, awaited in pending:
        req = dict(request)
        (items if awaited else later).append({
            "approval_id": approval_id, "kind": kind, "node": req.get("node"),
            "prompt": req.get("prompt"), "accept": f"rein approvals accept {approval_id}",
            "decline": f"rein approvals decline {approval_id}"})
    items += later
    first = items[0]
    return {"status": "waiting", **base, "for": "approval", "approvals": items,
            "message": f"a person must answer {first['kind']} {first['approval_id']}"
                       f" ({first['prompt'] or first['node'] or 'graph'}), not the agent: "
                       f"show them `{first['accept']}` (or decline) and stop",
            "exit_code": EXIT_WAITING}


__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_WAITING", "UNFINISHED", "approvals", "base_of",
           "cancelled", "done", "instruction", "stopped"]
