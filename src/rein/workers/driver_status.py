"""Where a run stands for its driver: the answer ``rein next`` prints.

Exactly one of four statuses, read from the run store with a few small queries and no
engine (``rein next`` must answer in well under 100 ms):

- ``instruction``: a driver turn is pending; the instruction is repeated as it was issued
  (same token, same attempt: asking again never starts a new attempt);
- ``waiting``: something other than the driver must act first: a person on the approval
  queue (with the exact ``rein approvals accept`` to run), another rein process advancing the
  run, an interrupted run to resume, or a node no worker serves;
- ``done``: the run succeeded;
- ``stopped``: the run ended otherwise, with a reason (``budget``, ``timeout``, ``blocked``,
  ``failed`` or ``cancelled``) and the exit code ``rein`` uses for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus, RunStatus
from rein.errors import ExitCode, StoreError
from rein.workers.driver_current import current_turn, waiting_turns, workspace_turns
from rein.workers.driver_protocol import INBOX

if TYPE_CHECKING:
    from rein.store.base import RunRow, Store
    from rein.workers.driver_store import Turn

_UNFINISHED = (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.AWAITING_HUMAN)


def pick_run(store: Store, run_id: str | None, workspace: Path | None = None,
             queue: list[Turn] | None = None) -> RunRow:
    """The run ``run_id`` (its top-level run); else the run of the workspace's current
    driver instruction (the head of ``queue`` when given); else the newest unfinished
    top-level run, else the newest one."""
    if run_id is not None:
        row = store.get_run(run_id)
        if row is None:
            raise StoreError(f"no run {run_id!r}", code="RUN404",
                             hint="list runs with `rein runs list`")
        while row.parent_run_id is not None:
            parent = store.get_run(row.parent_run_id)
            if parent is None:
                break
            row = parent
        return row
    rows = store.list_runs()
    if not rows:
        raise StoreError("there is no run in this workspace", code="STORE404",
                         hint="start one with `rein run GRAPH --approve DIGEST`")
    current = (queue[0] if queue else None) if queue is not None \
        else current_turn(store, workspace)
    if current is not None:  # `next` and `submit` agree: the instruction handed out first
        found = store.get_run(current.root_run_id)
        if found is not None:
            return found
    return next((r for r in rows if r.status in _UNFINISHED), rows[0])


def family(store: Store, root: str) -> list[RunId]:
    """``root`` and every child run below it."""
    out, stack = [RunId(root)], [RunId(root)]
    while stack:
        for child in store.child_runs(stack.pop()):
            out.append(child.run_id)
            stack.append(child.run_id)
    return out


def current_turns(store: Store, root: str) -> list[Turn]:
    """Pending turns of a run whose node still waits (see :func:`waiting_turns`)."""
    return waiting_turns(store, root)


def status_of(store: Store, workspace: Path, run_id: str | None = None) -> dict[str, Any]:
    """The ``rein next --json`` object for a run (see the module docstring).

    ``workspace`` is where the instruction's files live; the state is read from ``store``.
    """
    queue = workspace_turns(store, workspace)
    run = pick_run(store, run_id, workspace, queue)
    root, status = run.run_id, run.status.value
    base = {"run_id": root, "graph_id": run.graph_id, "run_status": status}
    if status == "succeeded":
        return {"status": "done", **base, "reason": "done", "exit_code": int(ExitCode.OK),
                "message": f"run {root} succeeded"}
    if status in ("failed", "partial", "cancelled"):
        reason, message = stop_reason(store, root, status)
        return {"status": "stopped", **base, "reason": reason, "message": message,
                "exit_code": int(ExitCode.FAILURE)}
    pending = current_turns(store, root)
    waiting = int(ExitCode.WAITING)
    if pending and queue and queue[0].token != pending[0].token:
        first = queue[0]  # only --run names a run whose instruction is not the current one
        return {"status": "waiting", **base, "for": "driver", "current": {
                    "token": first.token, "run_id": first.root_run_id, "node": first.node_key},
                "message": f"instruction {first.token} ({first.node_key} of run "
                           f"{first.root_run_id}) is current in this workspace: answer it "
                           f"first (`rein next --run {first.root_run_id}`); one instruction "
                           "at a time, so that each one's writes can be told apart",
                "exit_code": waiting}
    if pending:
        turn = pending[0]
        out = {"status": "instruction", **base, **dict(turn.instruction),
               "respond": f"write the envelope (it must validate against respond_with) to "
                          f"{INBOX}, then run `rein submit`; `rein submit -` reads stdin",
               "exit_code": waiting}
        later = [t for t in queue if t.token != turn.token]
        if later:  # handed out one at a time, after this one is answered
            out["also_pending"] = [t.node_key if t.root_run_id == root
                                   else f"{t.node_key} (run {t.root_run_id})" for t in later]
        return out
    runs = family(store, root)
    approvals = [a for a in store.approvals(status=ApprovalStatus.PENDING) if a.run_id in runs]
    if approvals:
        items = []
        for a in approvals:
            req = dict(a.request)
            items.append({"approval_id": a.approval_id, "kind": a.kind.value,
                          "node": req.get("node"), "prompt": req.get("prompt"),
                          "accept": f"rein approvals accept {a.approval_id}",
                          "decline": f"rein approvals decline {a.approval_id}"})
        first = items[0]
        return {"status": "waiting", **base, "for": "approval", "approvals": items,
                "message": f"a person must answer {first['kind']} {first['approval_id']}"
                           f" ({first['prompt'] or first['node'] or 'graph'}), not the agent: "
                           f"show them `{first['accept']}` (or decline) and stop",
                "exit_code": waiting}
    if status == "running":
        if store.run_locked(root):
            return {"status": "waiting", **base, "for": "run",
                    "message": "another rein process is advancing this run; ask again in a "
                               "moment", "exit_code": waiting}
        return {"status": "waiting", **base, "for": "resume",
                "message": f"the run was interrupted; continue it with `rein resume {root}`",
                "exit_code": waiting}
    node = _unserved(store, runs)
    return {"status": "waiting", **base, "for": "worker", "node": node,
            "message": f"no worker serves node {node or '?'}: enable the driver for its tier "
                       "([driver] tiers in rein.toml) or configure a model, then "
                       f"`rein resume {root}`", "exit_code": waiting}


def _unserved(store: Store, runs: list[RunId]) -> str | None:
    """The node of the latest ``worker/unavailable`` event in the family."""
    events = [e for r in runs
              for e in store.events(r, types=["worker/unavailable"])]
    if not events:
        return None
    latest = max(events, key=lambda e: (e.at, e.seq))
    return latest.payload.get("node")


def stop_reason(store: Store, root: str, status: str) -> tuple[str, str]:
    """Why a run ended without succeeding: budget, timeout, blocked, cancelled or failed."""
    if status == "cancelled":
        return "cancelled", f"run {root} was cancelled (see `rein runs show` for who and why)"
    runs = family(store, root)
    codes = {e.payload.get("code") for r in runs
             for e in store.events(r, types=["diagnostic"])}
    classes: set[str] = set()
    blocked: list[str] = []
    failed: list[str] = []
    why = ""
    for r in runs:
        for node in store.nodes(r):
            if node.status.value == "blocked":
                blocked.append(node.node_key)
            if node.status.value == "failed":
                failed.append(node.node_key)
                for attempt in (node.record.get("attempts") or [])[-1:]:
                    classes.add(str(attempt.get("x-rein-failure-class")
                                    or attempt.get("status")))
                    why = why or _attempt_failure(attempt)
    if "RT061" in codes or "budget_exceeded" in classes:
        return "budget", f"run {root} stopped at a budget limit ({status})"
    if blocked:
        return "blocked", f"node(s) {', '.join(blocked)} could not start ({status})"
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
    if missed:
        text += f": {', '.join(missed)}"
    return text


_TEXTS = ("string", "text", "markdown")


def _carries(output: Mapping[str, Any]) -> str:
    """What an output's value is: a path, or the content itself (a text with a path hint is
    the content; the file at the hint is the agent's to write as well)."""
    hint = output.get("path_hint")
    if output.get("type") in ("file", "directory"):
        return f" (the value is its path: {hint})" if hint else " (the value is its path)"
    if hint and output.get("type") in _TEXTS:
        return f" (the value is the text itself, not a path; also write it to {hint})"
    return f" (path: {hint})" if hint else ""


def check_params(params: Mapping[str, Any]) -> list[str]:
    """A criterion's parameters, one line each, as an agent needs them to pass it."""
    lines = []
    for key, value in params.items():
        if key == "run":
            lines.append(f"run: {value}")
        elif isinstance(value, str):
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False, default=str)}")
    return lines


def render_advisory(failures: list[Mapping[str, Any]]) -> list[str]:
    """Advisory checks the last attempt did not pass: they do not fail it, so no retry
    brings them back; this is the one place the agent hears of them."""
    if not failures:
        return []
    lines = ["", "## Advisory checks your last submit did not pass (the attempt stands)"]
    for failure in failures:
        lines.append(f"- {failure.get('id')}")
        evidence = failure.get("evidence")
        if evidence:
            text = json.dumps(evidence, ensure_ascii=False, default=str) \
                if not isinstance(evidence, str) else evidence
            lines.append(f"  evidence: {text[:800]}")
    return lines


def render(status: Mapping[str, Any]) -> str:
    """The status as text for an agent or a person reading a terminal."""
    kind = status["status"]
    advisory = render_advisory(list(status.get("advisory_failures") or []))
    if kind != "instruction":
        head = f"{kind.upper()}: {status.get('message', '')}"
        if kind == "stopped":
            head = f"STOPPED ({status['reason']}): {status.get('message', '')}"
        return "\n".join([head + f"\nrun {status['run_id']} · exit code "
                          f"{status['exit_code']}", *advisory])
    lines = [(f"INSTRUCTION {status['token']} · run {status['run_id']} · node {status['node']} "
             f"· attempt {status['attempt']} ({status['kind']})"), *advisory]
    if status.get("clean_context"):
        lines.append(f"=== CLEAN CONTEXT: {status.get('clean_context_reason')} ===")
    brief = re.sub(r"\n{3,}", "\n\n", str(status["brief"]).strip())
    lines += ["", f"# {status['title']}", "", brief]
    if status.get("brief_in_file"):
        lines.append(f"(whole brief: {status['brief_in_file']['path']})")
    if status.get("feedback"):
        fb = status["feedback"]
        lines += ["", (f"## The previous attempt failed ({fb['failure_class']}): "
                      f"{fb['summary']}")]
        for c in fb.get("failed_criteria") or []:
            lines.append(f"- {c.get('id')}: {c.get('description')}")
            evidence = c.get("evidence")
            if isinstance(evidence, Mapping):
                for key, value in evidence.items():
                    text = str(value).strip().replace("\n", "\n    ")
                    lines.append(f"  {key}: {text[:800]}")
            elif evidence:
                lines.append(f"  evidence: {str(evidence)[:800]}")
    if status.get("inputs") or status.get("inputs_in_files"):
        lines += ["", "## Inputs"]
        for name, value in (status.get("inputs") or {}).items():
            lines.append(f"- {name}: {json.dumps(value, ensure_ascii=False)}")
        for name, ref in (status.get("inputs_in_files") or {}).items():
            lines.append(f"- {name}: in {ref['path']} ({ref['bytes']} bytes)")
    if status.get("outputs"):
        lines += ["", "## Produce"]
    for o in status.get("outputs") or []:
        need = "required" if o.get("required") else "optional"
        lines.append(f"- {o['name']} [{o['type']}, {need}]{_carries(o)}: {o['description']}")
        if o.get("schema"):
            lines.append(f"  schema: {json.dumps(o['schema'], ensure_ascii=False)}")
    if status.get("checks"):
        lines += ["", "## Checked by rein after you submit"]
        for c in status["checks"]:
            advisory = ", advisory" if c.get("severity") == "advisory" else ""
            lines.append(f"- {c['id']} ({c['kind']}{advisory}): {c.get('description', '')}")
            lines += [f"  {line}" for line in check_params(c.get("params") or {})]
    if status.get("branches"):
        lines += ["", "## Choose one decision label"]
        lines += [f"- {b['label']}: {b.get('description', '')}" for b in status["branches"]]
    granted = ", ".join(status.get("permissions") or [])
    lines += ["", "## Rules",
              (f"- permissions: {granted} (writes outside fs:write: the submit is refused "
               "so that you can undo them; repeated, they fail the attempt)" if granted
               else "- permissions: none (change no file: a submit after a write is refused "
                    "so that you can undo it; repeated, it fails the attempt)"),
              f"- workspace: {status.get('workspace_access')}, network: {status.get('network')}"]
    budget = status.get("budget") or {}
    if budget.get("enforced"):
        lines.append(f"- enforced: {json.dumps(budget['enforced'])}")
    if budget.get("unenforced"):
        lines.append(f"- asked of you, not enforced: {json.dumps(budget['unenforced'])}")
    lines += ["", "## Respond",
              (f"Write this JSON to {INBOX}, each <placeholder> replaced with the real "
               "value, then run `rein submit`:"),
              json.dumps(status["example"], ensure_ascii=False),
              ("It must validate against respond_with (`rein next --json`). "
              "status \"failed\" with a message if you cannot do the work."),
              f"exit code {status['exit_code']} (waiting for you)"]
    return "\n".join(lines)


__all__ = ["current_turns", "family", "pick_run", "render", "status_of", "stop_reason"]
