"""Where a run stands for its driver: the answer ``rein next`` prints.

Exactly one of four statuses, read from the run store with a few small queries and no
engine (``rein next`` must answer in well under 100 ms):

- ``instruction``: a driver turn is pending; the instruction is repeated as it was issued
  (same token, same attempt: asking again never starts a new attempt);
- ``waiting``: something other than the driver must act first: a person on the approval
  queue (with the exact ``rein approvals accept`` to run), another rein process advancing the
  run, an interrupted run to resume, or a node no worker serves;
- ``done``: the run succeeded (a run of the development or specification flow says which
  command continues the flow, ``next``);
- ``stopped``: the run ended otherwise, with a reason (``budget``, ``timeout``, ``blocked``,
  ``failed`` or ``cancelled``) and the exit code ``rein`` uses for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus, RunStatus
from rein.errors import ExitCode, StoreError
from rein.workers.driver import answers
from rein.workers.driver.current import current_turn, waiting_turns, workspace_turns
from rein.workers.driver.render import render

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.store.base import RunRow, Store
    from rein.workers.driver.store import Turn

_UNFINISHED = (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.AWAITING_HUMAN)


def pick_run(store: Store, run_id: str | None, workspace: Path,
             queue: list[Turn] | None = None, runs: list[RunRow] | None = None) -> RunRow:
    """The run ``run_id`` (its top-level run), refused when it belongs to another
    workspace (RUN010); else, among ``workspace``'s runs (``runs`` when given), the run
    of the workspace's current driver instruction (the head of ``queue`` when given), else
    the newest unfinished one, else the newest one."""
    from rein.store.workspace_id import refuse_elsewhere, runs_here

    if run_id is not None:
        row = store.get_run(run_id)
        if row is None:
            raise StoreError(f"no run {run_id!r}", code="RUN404",
                             hint="list runs with `rein runs list`")
        from rein.store.lineage import top_run

        top = top_run(store, row.run_id) or row
        refuse_elsewhere(top, workspace, doing="hand out its instructions")
        return top
    rows = runs_here(store, workspace) if runs is None else runs
    if not rows:
        raise StoreError("there is no run in this workspace", code="STORE404",
                         hint=no_run_hint(workspace) + _elsewhere(store))
    current = (queue[0] if queue else None) if queue is not None \
        else current_turn(store, workspace)
    if current is not None:  # `next` and `submit` agree: the instruction handed out first
        found = next((r for r in rows if r.run_id == current.root_run_id), None)
        if found is not None:
            return found
    return next((r for r in rows if r.status in _UNFINISHED), rows[0])


def no_run_hint(workspace: str | Path) -> str:
    """How to start a run a driver can answer: a brief in ``specs/`` is the flows'."""
    import os

    specs = os.path.join(workspace, "specs")
    try:
        briefs = any(name.endswith(".md") for name in os.listdir(specs))
    except OSError:
        briefs = False
    if briefs:
        return ("start a flow on the briefs in specs/: `rein spec` (a brief to a reviewed "
                "plan) or `rein dev` (briefs to committed features); or a graph with `rein "
                "run GRAPH --approve DIGEST`")
    return "start one with `rein run GRAPH --approve DIGEST` (or a flow: `rein dev`, `rein spec`)"


def _elsewhere(store: Store) -> str:
    """Where the store's runs are, when none is this workspace's (for the hint)."""
    others = store.list_runs()
    unscoped = sum(1 for r in others if r.workspace is None)
    out = ""
    if len(others) > unscoped:
        out += (f"; {len(others) - unscoped} run(s) in this store belong to other workspaces "
                "(`rein runs list` says which)")
    if unscoped:
        out += (f"; {unscoped} run(s) were stored before runs recorded their workspace: "
                "name one with --run RUN")
    return out


def family(store: Store, root: str) -> list[RunId]:
    """``root`` and every child run below it."""
    from rein.store.lineage import family as runs_below

    return [r.run_id for r in runs_below(store, root)] or [RunId(root)]


def current_turns(store: Store, root: str) -> list[Turn]:
    """Pending turns of a run whose node still waits (see :func:`waiting_turns`)."""
    return waiting_turns(store, root)


def status_of(store: Store, workspace: Path, run_id: str | None = None) -> dict[str, Any]:
    """The ``rein next --json`` object for a run (see the module docstring).

    ``workspace`` is where the instruction's files live; the state is read from ``store``.
    """
    from rein.store.workspace_id import runs_here

    mine = runs_here(store, workspace)
    queue = workspace_turns(store, workspace, mine)
    run = pick_run(store, run_id, workspace, queue, mine)
    root, status = run.run_id, run.status.value
    base = answers.base_of(root, run.graph_id, status)
    if status == "succeeded":
        return answers.done(base)
    if status in ("failed", "partial", "cancelled"):
        return answers.stopped(base, *stop_reason(store, root, status))
    pending = current_turns(store, root)
    if pending:
        return answers.instruction(base, pending[0], queue)
    runs = family(store, root)
    approvals = [a for a in store.approvals(status=ApprovalStatus.PENDING) if a.run_id in runs]
    if approvals:
        return answers.approvals(base, ((a.approval_id, a.kind.value, a.request,
                                         awaited(store, a.run_id, a.request))
                                        for a in approvals))
    return _stalled(store, base, runs)


_WAITING = int(ExitCode.WAITING)


def awaited(store: Store, run_id: str, request: Mapping[str, Any]) -> bool:
    """Whether a pending approval's node has not ended (one about the whole graph names
    no node): the run may wait for it (:func:`rein.workers.driver.answers.approvals`)."""
    key = request.get("node")
    if not isinstance(key, str) or not key:
        return True
    node = store.node(RunId(run_id), key)
    return node is not None and not node.status.terminal


def _stalled(store: Store, base: dict[str, Any], runs: list[RunId]) -> dict[str, Any]:
    """Nothing for the driver or a person: another process advances the run, the run was
    interrupted, an answer is recorded that the run has not taken up, or no worker serves
    one of its nodes."""
    root = base["run_id"]
    # Held: a process is at work on it (a submit between recording its answer and taking
    # it up holds the lock throughout).
    if store.run_locked(root):
        return {"status": "waiting", **base, "for": "run",
                "message": "another rein process is advancing this run; ask again in a "
                           "moment", "exit_code": _WAITING}
    if base["run_status"] == "running":
        return {"status": "waiting", **base, "for": "resume",
                "message": f"the run was interrupted; continue it with `rein resume {root}`",
                "exit_code": _WAITING}
    waits = node_waits(store, runs)
    for wait in waits:
        if not answered(store, wait):
            continue
        node, how = wait.get("node"), f"`rein resume {root}`"
        if wait.get("token"):
            what = f"the answer to {node} attempt {wait.get('attempt')} ({wait['token']})"
            how = f"`rein submit` the same envelope again, or {how}"
        else:
            what = f"the answer to approval {wait.get('approval_id')} ({node})"
        from rein.store.lineage import approved_in_a_sandbox

        if not wait.get("token") and approved_in_a_sandbox(store, root):
            # A person's answer to a run approved in a sandbox is left to the agent.
            said = (f"{what} is recorded; the run was approved from a sandbox, so it "
                    f"continues in one, not in the person's process: {how} (from the "
                    "agent) continues the run")
        else:
            said = (f"{what} is recorded, but the rein process that recorded it stopped "
                    f"before the run took it up: {how} continues the run")
        return {"status": "waiting", **base, "for": "resume", "node": node,
                "message": said, "exit_code": _WAITING}
    node = next((str(w["node"]) for w in waits if w.get("reason") == "worker"
                 and not w.get("token") and w.get("node")), None) or _unserved(store, runs)
    if node is None:  # nothing names what it waits for: resuming finds out
        return {"status": "waiting", **base, "for": "resume",
                "message": f"the run is {base['run_status']} and nothing in it is pending: "
                           f"continue it with `rein resume {root}`", "exit_code": _WAITING}
    return {"status": "waiting", **base, "for": "worker", "node": node,
            "message": f"no worker serves node {node}: enable the driver for its tier "
                       "([driver] tiers in rein.toml) or configure a model, then "
                       f"`rein resume {root}`", "exit_code": _WAITING}


def node_waits(store: Store, runs: list[RunId]) -> list[dict[str, Any]]:
    """What each node of the run family that has not ended waits for: the payload of its
    latest ``node/waiting`` event (a driver ``token``, an ``approval_id``, a ``reason``)."""
    out = []
    for run in runs:
        latest: dict[str, Mapping[str, Any]] = {}
        for event in store.events(run, types=["node/waiting"]):
            latest[str(event.payload.get("node"))] = event.payload
        for key, payload in latest.items():
            node = store.node(run, key)
            if node is not None and not node.status.terminal:
                out.append({**payload, "run_id": run})
    return out


def answered(store: Store, wait: Mapping[str, Any]) -> bool:
    """Whether what a node waits for (an entry of :func:`node_waits`) has been given: its
    driver instruction is answered, or its approval is."""
    if isinstance(wait.get("token"), str):
        turn = store.driver_turn(wait["token"])
        return turn is not None and turn.status.value == "answered"
    if isinstance(wait.get("approval_id"), str):
        row = store.get_approval(wait["approval_id"])
        return row is not None and row.status is not ApprovalStatus.PENDING
    return False


def answer_untaken(store: Store, root: str) -> bool:
    """Whether the paused run ``root`` holds an answer it has not taken up: a process that
    recorded it (``rein submit``, ``rein approvals accept``) stopped before it advanced
    the run, which the next advance does."""
    return any(answered(store, wait) for wait in node_waits(store, family(store, root)))


def _unserved(store: Store, runs: list[RunId]) -> str | None:
    """The node of the latest ``worker/unavailable`` event in the family."""
    events = [e for r in runs
              for e in store.events(r, types=["worker/unavailable"])]
    if not events:
        return None
    latest = max(events, key=lambda e: (e.at, e.seq))
    node = latest.payload.get("node")
    return str(node) if node else None


def stop_reason(store: Store, root: str, status: str) -> tuple[str, str]:
    """Why a run ended without succeeding: budget, timeout, blocked, cancelled or failed."""
    if status == "cancelled":
        return answers.cancelled(root)
    runs = family(store, root)
    codes = {e.payload.get("code") for r in runs
             for e in store.events(r, types=["diagnostic"])}
    classes: set[str] = set()
    blocked: list[str] = []
    failed: list[str] = []
    why = refused = ""
    for r in runs:
        for node in store.nodes(r):
            if node.status.value == "blocked":
                blocked.append(node.node_key)
                refusal = node.record.get("x-rein-blocked")
                if isinstance(refusal, dict) and refusal.get("message"):
                    refused = refused or f"{refusal.get('code')}: {refusal['message']}"
            if node.status.value == "failed":
                failed.append(node.node_key)
                for attempt in (node.record.get("attempts") or [])[-1:]:
                    classes.add(str(attempt.get("x-rein-failure-class")
                                    or attempt.get("status")))
                    why = why or _attempt_failure(attempt)
    if "RT061" in codes or "budget_exceeded" in classes:
        return "budget", f"run {root} stopped at a budget limit ({status})"
    if blocked:
        return "blocked", (f"node(s) {', '.join(blocked)} could not start ({status})"
                           + (f": {refused}" if refused else ""))
    if "timeout" in classes:
        return "timeout", f"a node ran out of time ({status})"
    detail = f"node(s) {', '.join(failed)} failed" if failed else "the run did not succeed"
    if why:
        detail += f" ({why})"
    return "failed", f"{detail}; the run ended {status}; see `rein runs show {root}`"


def _attempt_failure(attempt: Mapping[str, Any]) -> str:
    """Why an attempt failed, in one line: its error, and the criteria that did not pass."""
    text = str(attempt.get("error") or attempt.get("status") or "")
    results = (attempt.get("success") or {}).get("results") or []
    missed = [str(r.get("id")) for r in results
              if not r.get("passed") and r.get("severity", "required") == "required"]
    if missed and f"criterion {missed[0]} failed" not in text:  # an older record's error
        text += f": {', '.join(missed)}"
    return text


__all__ = ["answer_untaken", "answered", "current_turns", "family", "node_waits", "pick_run",
           "render", "status_of", "stop_reason"]
