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
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.errors import ExitCode, StoreError
from rein.workers.driver_protocol import INBOX
from rein.workers.driver_store import TurnStatus, has_table, turns

_TERMINAL_NODE = ("succeeded", "failed", "skipped", "cancelled", "blocked")
_RUN_COLUMNS = "run_id, status, graph_id, parent_run_id"


def _runs(conn: sqlite3.Connection, where: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE {where} ORDER BY created DESC",
                        args).fetchall()


def pick_run(conn: sqlite3.Connection, run_id: str | None) -> tuple[Any, ...]:
    """The run ``run_id`` (its top-level run), else the newest unfinished top-level run,
    else the newest top-level run."""
    if run_id is not None:
        rows = _runs(conn, "run_id = ?", (run_id,))
        if not rows:
            raise StoreError(f"no run {run_id!r}", code="RUN404",
                             hint="list runs with `rein runs list`")
        row = rows[0]
        while row[3] is not None:
            row = _runs(conn, "run_id = ?", (row[3],))[0]
        return row
    rows = _runs(conn, "parent_run_id IS NULL AND status IN ('running', 'waiting', "
                 "'awaiting_human')", ())
    rows = rows or _runs(conn, "parent_run_id IS NULL", ())
    if not rows:
        raise StoreError("there is no run in this workspace", code="STORE404",
                         hint="start one with `rein run GRAPH --approve DIGEST`")
    return rows[0]


def family(conn: sqlite3.Connection, root: str) -> list[str]:
    """``root`` and every child run below it."""
    out, stack = [root], [root]
    while stack:
        for (child,) in conn.execute("SELECT run_id FROM runs WHERE parent_run_id = ?",
                                     (stack.pop(),)).fetchall():
            out.append(child)
            stack.append(child)
    return out


def _node_status(conn: sqlite3.Connection, run_id: str, key: str) -> str | None:
    row = conn.execute("SELECT status FROM nodes WHERE run_id = ? AND node_key = ?",
                       (run_id, key)).fetchone()
    return None if row is None else str(row[0])


def current_turns(conn: sqlite3.Connection, root: str) -> list[Any]:
    """Pending turns whose node still waits (a node another worker finished is skipped)."""
    if not has_table(conn):
        return []
    return [t for t in turns(conn, root, status=TurnStatus.PENDING)
            if _node_status(conn, t.run_id, t.node_key) not in _TERMINAL_NODE]


def status_of(conn: sqlite3.Connection, workspace: Path, run_id: str | None = None
              ) -> dict[str, Any]:
    """The ``rein next --json`` object for a run (see the module docstring)."""
    root, status, graph_id, _ = pick_run(conn, run_id)
    base = {"run_id": root, "graph_id": graph_id, "run_status": status}
    if status == "succeeded":
        return {"status": "done", **base, "reason": "done", "exit_code": int(ExitCode.OK),
                "message": f"run {root} succeeded"}
    if status in ("failed", "partial", "cancelled"):
        reason, message = stop_reason(conn, root, status)
        return {"status": "stopped", **base, "reason": reason, "message": message,
                "exit_code": int(ExitCode.FAILURE)}
    pending = current_turns(conn, root)
    waiting = int(ExitCode.WAITING)
    if pending:
        turn = pending[0]
        out = {"status": "instruction", **base, **dict(turn.instruction),
               "respond": f"write the envelope (it must validate against respond_with) to "
                          f"{INBOX}, then run `rein submit`; `rein submit -` reads stdin",
               "exit_code": waiting}
        if len(pending) > 1:
            out["also_pending"] = [t.node_key for t in pending[1:]]
        return out
    runs = family(conn, root)
    marks = ",".join("?" * len(runs))
    approvals = conn.execute(
        f"SELECT approval_id, kind, request FROM approvals WHERE status = 'pending' AND "
        f"run_id IN ({marks}) ORDER BY rowid", runs).fetchall()
    if approvals:
        items = []
        for approval_id, kind, request in approvals:
            req = json.loads(request)
            items.append({"approval_id": approval_id, "kind": kind, "node": req.get("node"),
                          "prompt": req.get("prompt"),
                          "accept": f"rein approvals accept {approval_id}",
                          "decline": f"rein approvals decline {approval_id}"})
        first = items[0]
        return {"status": "waiting", **base, "for": "approval", "approvals": items,
                "message": f"a person must answer {first['kind']} {first['approval_id']}"
                           f" ({first['prompt'] or first['node'] or 'graph'}): "
                           f"`{first['accept']}` (or decline)", "exit_code": waiting}
    if status == "running":
        if lock_held(workspace, root):
            return {"status": "waiting", **base, "for": "run",
                    "message": "another rein process is advancing this run; ask again in a "
                               "moment", "exit_code": waiting}
        return {"status": "waiting", **base, "for": "resume",
                "message": f"the run was interrupted; continue it with `rein resume {root}`",
                "exit_code": waiting}
    node = _unserved(conn, runs)
    return {"status": "waiting", **base, "for": "worker", "node": node,
            "message": f"no worker serves node {node or '?'}: enable the driver for its tier "
                       "([driver] tiers in rein.toml) or configure a model, then "
                       f"`rein resume {root}`", "exit_code": waiting}


def _unserved(conn: sqlite3.Connection, runs: list[str]) -> str | None:
    marks = ",".join("?" * len(runs))
    row = conn.execute(f"SELECT payload FROM events WHERE type = 'worker/unavailable' AND "
                       f"run_id IN ({marks}) ORDER BY rowid DESC LIMIT 1", runs).fetchone()
    return None if row is None else json.loads(row[0]).get("node")


def stop_reason(conn: sqlite3.Connection, root: str, status: str) -> tuple[str, str]:
    """Why a run ended without succeeding: budget, timeout, blocked, cancelled or failed."""
    if status == "cancelled":
        return "cancelled", f"run {root} was cancelled through the approval queue"
    runs = family(conn, root)
    marks = ",".join("?" * len(runs))
    codes = {json.loads(p).get("code") for (p,) in conn.execute(
        f"SELECT payload FROM events WHERE type = 'diagnostic' AND run_id IN ({marks})",
        runs).fetchall()}
    classes: set[str] = set()
    blocked: list[str] = []
    failed: list[str] = []
    why = ""
    for key, node_status, record in conn.execute(
            f"SELECT node_key, status, record FROM nodes WHERE run_id IN ({marks}) "
            "ORDER BY seq", runs).fetchall():
        if node_status == "blocked":
            blocked.append(key)
        if node_status == "failed":
            failed.append(key)
            for attempt in (json.loads(record).get("attempts") or [])[-1:]:
                classes.add(str(attempt.get("x-rein-failure-class") or attempt.get("status")))
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


def lock_held(workspace: Path, run_id: str) -> bool:
    """Whether another process holds the run's lock (``rein run``/``resume``/``submit``)."""
    import fcntl

    path = workspace / ".rein" / "locks" / f"{run_id}.lock"
    if not path.exists():
        return False
    with path.open("a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


def render(status: Mapping[str, Any]) -> str:
    """The status as text for an agent or a person reading a terminal."""
    kind = status["status"]
    if kind != "instruction":
        head = f"{kind.upper()}: {status.get('message', '')}"
        if kind == "stopped":
            head = f"STOPPED ({status['reason']}): {status.get('message', '')}"
        return head + f"\nrun {status['run_id']} · exit code {status['exit_code']}"
    lines = [(f"INSTRUCTION {status['token']} · run {status['run_id']} · node {status['node']} "
             f"· attempt {status['attempt']} ({status['kind']})")]
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
        hint = f" (path: {o['path_hint']})" if o.get("path_hint") else ""
        need = "required" if o.get("required") else "optional"
        lines.append(f"- {o['name']} [{o['type']}, {need}]{hint}: {o['description']}")
    if status.get("checks"):
        lines += ["", "## Checked by rein after you submit"]
        lines += [f"- {c['id']} ({c['kind']}{', advisory' if c.get('severity') == 'advisory' else ''})"
                  f": {c.get('description', '')}" for c in status["checks"]]
    if status.get("branches"):
        lines += ["", "## Choose one decision label"]
        lines += [f"- {b['label']}: {b.get('description', '')}" for b in status["branches"]]
    granted = ", ".join(status.get("permissions") or [])
    lines += ["", "## Rules",
              (f"- permissions: {granted} (writes outside fs:write fail the attempt)" if granted
               else "- permissions: none (change no file: any write fails the attempt)"),
              f"- workspace: {status.get('workspace_access')}, network: {status.get('network')}"]
    budget = status.get("budget") or {}
    if budget.get("enforced"):
        lines.append(f"- enforced: {json.dumps(budget['enforced'])}")
    if budget.get("unenforced"):
        lines.append(f"- asked of you, not enforced: {json.dumps(budget['unenforced'])}")
    lines += ["", "## Respond",
              f"Write this JSON (filled in) to {INBOX}, then run `rein submit`:",
              json.dumps(status["example"], ensure_ascii=False),
              ("It must validate against respond_with (`rein next --json`). "
              "status \"failed\" with a message if you cannot do the work."),
              f"exit code {status['exit_code']} (waiting for you)"]
    return "\n".join(lines)


__all__ = ["current_turns", "family", "lock_held", "pick_run", "render", "status_of",
           "stop_reason"]
