"""Threads: durable conversations in the store.

A thread holds its workspace directory, OAP profile, sandbox policy and approval policy
(:mod:`rein.engine.cases.sessions.policy`), a name and a preview; its turns are rows of
``thread_turns``, each naming the run it started. Forking copies the turn rows (the runs
are shared and never changed), so the original thread is untouched. Its Codex ``Thread``
shape is the protocol layer's (:mod:`rein.protocol.threads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.engine.cases.sessions import policy
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


def overrides(row: ThreadRow, *, workspace: Path, tiers: Mapping[str, Any],
              cwd: str | None = None, sandbox: Any = None, approval_policy: Any = None,
              model: str | None = None) -> dict[str, Any]:
    """The thread settings a turn's overrides change, checked: they hold for that turn
    and the turns after it, as in Codex. ``cwd`` stays inside the workspace (THREAD002);
    ``model`` must be one a ``[tiers.<tier>]`` route serves, and selects that tier
    (THREAD007); the sandbox is a request the engine narrows, as on thread/start."""
    out: dict[str, Any] = {}
    if cwd is not None:
        out["cwd"] = new_thread("-", workspace=workspace, now="", cwd=cwd).data["cwd"]
    if sandbox is not None:
        out["sandbox"] = policy.sandbox_policy(sandbox)
    if approval_policy is not None:
        out["approvalPolicy"] = policy.approval_policy(approval_policy)
    if model is not None and model != row.data.get("model"):
        served = {str(t.get("model")): name for name, t in tiers.items()
                  if isinstance(t, Mapping) and t.get("model")}
        if model not in served:
            known = ", ".join(sorted(served)) or "none"
            raise ConfigError(f"model {model!r} is served by no tier of rein.toml (models: "
                              f"{known})", code="THREAD007",
                              hint="name a model a [tiers.<tier>] table serves, or leave "
                                   "model out")
        table = tiers[served[model]]
        out.update(model=model, tier=served[model],
                   modelProvider=str(table.get("provider") or "rein"))
    return out


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


def fork(store: Store, source: ThreadRow, new_id: str, now: str, turn_id: Any,
         run_of: Any = None) -> ThreadRow:
    """A new thread with ``source``'s settings and history; ``source`` is untouched.
    ``run_of``: finds the run of a turn whose run id was not recorded."""
    # What was accepted for the session stays with it: a fork is a new session, as in
    # Codex, and asks again.
    row = changed(source.replace(thread_id=new_id, created_at=now, archived=False), now,
                  forkedFromId=source.thread_id, acceptedForSession=[])
    with store.atomic():
        store.save_thread(row)
        for turn in store.thread_turns(source.thread_id):
            copied = {**turn.input, "forkedFrom": turn.turn_id}
            run_id = turn.run_id or (run_of(turn) if run_of is not None else None)
            if run_id is None:  # a digest question still open stays the original's
                copied.pop("digestApproval", None)
            store.add_thread_turn(ThreadTurnRow(
                thread_id=new_id, seq=turn.seq, turn_id=turn_id(), run_id=run_id,
                input=copied, created_at=turn.created_at))
    return row
