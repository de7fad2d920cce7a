"""Threads: durable conversations in the store, and their Codex ``Thread`` shape.

A thread holds its workspace directory, OAP profile, sandbox policy and approval policy
(:mod:`rein.engine.sessions.policy`), a name and a preview; its turns are rows of
``thread_turns``, each naming the run it started. Forking copies the turn rows (the runs
are shared and never changed), so the original thread is untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.version import VERSION
from rein.engine.sessions import policy
from rein.engine.sessions.feed import ms
from rein.errors import ConfigError, ReinError
from rein.store.base import Store, ThreadRow, ThreadTurnRow


def new_thread(thread_id: str, *, workspace: Path, now: str, cwd: str | None = None,
               profile: str | None = None, sandbox: Any = None, approval_policy: Any = None,
               name: str | None = None, ephemeral: bool = False,
               model: str = "", provider: str = "rein",
               forked_from: str | None = None) -> ThreadRow:
    """A thread row with its settings checked (THREAD002 for an unknown policy)."""
    where = (workspace / cwd).resolve() if cwd else workspace
    if where != workspace and workspace not in where.parents:
        # Turns run in the workspace; a thread elsewhere would show one place and act in
        # another (and name graphs outside it).
        raise ConfigError(f"cwd {cwd} is outside the workspace {workspace}", code="THREAD002",
                          hint="start the server with --workspace there, or give a "
                               "directory inside it")
    data = {"cwd": str(where), "profile": profile, "sandbox": policy.sandbox_policy(sandbox),
            "approvalPolicy": policy.approval_policy(approval_policy), "name": name,
            "preview": "", "ephemeral": bool(ephemeral), "model": model,
            "modelProvider": provider, "forkedFromId": forked_from}
    return ThreadRow(thread_id=thread_id, data=data, archived=False, created_at=now,
                     updated_at=now)


def get(store: Store, thread_id: str) -> ThreadRow:
    """The thread, or THREAD404."""
    row = store.get_thread(thread_id)
    if row is None:
        raise ReinError(f"no thread {thread_id!r} in this workspace", code="THREAD404",
                        hint="list the threads (thread/list, or harness.threads())")
    return row


def changed(row: ThreadRow, now: str, *, archived: bool | None = None,
            **data: Any) -> ThreadRow:
    """``row`` with some settings replaced (``None`` values are kept as given)."""
    return row.replace(data={**row.data, **data}, updated_at=now,
                       archived=row.archived if archived is None else archived)


def fork(store: Store, source: ThreadRow, new_id: str, now: str, turn_id: Any) -> ThreadRow:
    """A new thread with ``source``'s settings and history; ``source`` is untouched."""
    row = changed(source.replace(thread_id=new_id, created_at=now, archived=False), now,
                  forkedFromId=source.thread_id)
    with store.atomic():
        store.save_thread(row)
        for turn in store.thread_turns(source.thread_id):
            store.add_thread_turn(ThreadTurnRow(
                thread_id=new_id, seq=turn.seq, turn_id=turn_id(), run_id=turn.run_id,
                input={**turn.input, "forkedFrom": turn.turn_id}, created_at=turn.created_at))
    return row


def to_json(row: ThreadRow, *, status: Mapping[str, Any], turns: list[dict[str, Any]]
            ) -> dict[str, Any]:
    """The thread as Codex's ``Thread`` (every field the official client requires)."""
    d = row.data
    return {"id": row.thread_id, "sessionId": row.thread_id, "preview": d.get("preview") or "",
            "ephemeral": bool(d.get("ephemeral")), "modelProvider": d.get("modelProvider") or
            "rein", "createdAt": ms(row.created_at) // 1000,
            "updatedAt": ms(row.updated_at) // 1000, "status": dict(status), "path": None,
            "cwd": d["cwd"], "cliVersion": VERSION, "source": "appServer",
            "name": d.get("name"), "forkedFromId": d.get("forkedFromId"), "turns": turns}
