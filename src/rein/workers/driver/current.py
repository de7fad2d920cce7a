"""Which driver instruction is current in a workspace, and what its writes are measured from.

A driver's writes are told apart only by time: rein sees the workspace before and after,
never who wrote. So one workspace has at most one *current* instruction, whatever the
number of runs or parallel nodes waiting for the driver: the oldest pending turn (ties by
token). ``rein next`` hands out only that one, and ``rein submit`` answers only that one;
the others wait their turn, listed as such.

A turn waiting behind another was issued before the other's work was done, so its own
snapshot would count that work as its own. Its writes are measured from the latest
snapshot of the workspace instead: its own, or the one taken when a later answer was
submitted (stored with that answer), whichever is newer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from rein.core.states import RunStatus, TurnStatus
from rein.store.workspace_id import runs_here

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.store.base import DriverTurn as Turn
    from rein.store.base import RunRow, Store

_UNFINISHED = (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.AWAITING_HUMAN)


def waiting_turns(store: Store, root: str) -> list[Turn]:
    """Pending turns of one run family whose node still waits (a node another worker
    finished is skipped), oldest first."""
    out = []
    for turn in store.driver_turns(root, status=TurnStatus.PENDING):
        node = store.node(turn.run_id, turn.node_key)
        if node is None or not node.status.terminal:
            out.append(turn)
    return out


def workspace_turns(store: Store, workspace: Path, runs: list[RunRow] | None = None
                    ) -> list[Turn]:
    """Every waiting turn of the unfinished runs of ``workspace``
    (:func:`rein.store.workspace_id.runs_here`, unless ``runs`` gives them), current
    first. Another workspace's instructions are not this one's to hand out: its driver
    works in another directory."""
    out: list[Turn] = []
    for run in runs_here(store, workspace) if runs is None else runs:
        if run.status in _UNFINISHED:
            out += waiting_turns(store, run.run_id)
    return sorted(out, key=lambda t: (t.created_at, t.token))


def current_turn(store: Store, workspace: Path) -> Turn | None:
    """The one instruction of ``workspace`` a driver may work on now, or ``None``."""
    pending = workspace_turns(store, workspace)
    return pending[0] if pending else None


def baseline_for(store: Store, turn: Turn, workspace: Path) -> Mapping[str, Any]:
    """The snapshot ``turn``'s writes are measured from (see the module docstring): the
    answers of ``workspace``'s runs count, another workspace's files are not these."""
    best: Mapping[str, Any] = turn.baseline
    issued = _moment(turn.created_at)
    for run in runs_here(store, workspace):
        if run.finished_at is not None and _moment(run.finished_at) < issued:
            continue  # ended before this instruction: nothing it answered can be newer
        for other in store.driver_turns(run.run_id, status=TurnStatus.ANSWERED):
            after = (other.answer or {}).get("after")
            if (isinstance(after, Mapping) and other.token != turn.token
                    and int(after.get("taken_ns") or 0) > int(best.get("taken_ns") or 0)):
                best = after
    return best


def _moment(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(str(text))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def latest_snapshot(store: Store, root: str) -> Mapping[str, Any] | None:
    """The newest snapshot stored for a run family (to reuse its hashes), or ``None``."""
    found: Mapping[str, Any] | None = None
    for turn in store.driver_turns(root):
        for snap in (turn.baseline, (turn.answer or {}).get("after")):
            if isinstance(snap, Mapping) and int(snap.get("taken_ns") or 0) > int(
                    (found or {}).get("taken_ns") or 0):
                found = snap
    return found


__all__ = ["baseline_for", "current_turn", "latest_snapshot", "waiting_turns",
           "workspace_turns"]
