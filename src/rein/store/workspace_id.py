"""Which workspace a run belongs to, so that "the run" means a run of this workspace.

Several workspaces, on one machine or several, may share one store (PostgreSQL, or a SQLite
file named by ``--store``). Every top-level run records the workspace that started it, and
every command that picks a run without being told considers only this workspace's runs;
one that acts on a run (advances it, answers its driver, cancels it) refuses a run of
another workspace (``RUN010``), since its checks would run in the wrong directory.

**A workspace is named by an id**, ``ws-`` and 32 hex digits, made when the workspace
starts its first run and kept in ``.rein/workspace.json`` with the real path and the
machine it was made for. An id rather than a path: two machines (or containers) sharing a
store may each have a workspace at the same path, and a workspace that is moved keeps its
runs. A copy must not keep them, so the file is checked against where it is found:

- found where it was made (or at that path on another machine: one folder mounted on
  both): it names this workspace;
- found at another path, on the machine it was made on, while the folder it was made for
  still holds the same id: this is a copy, which gets an id of its own when it starts a
  run (until then it has none, and no run is its);
- found at another path, and the folder it was made for is gone or holds another id: the
  workspace was moved, and the id follows it;
- found at another path on another machine: that folder cannot be looked at from here,
  so it is taken for a copy.

Runs stored before runs recorded a workspace (schema version 6) have none: they belong to
the workspace whose own embedded store (``.rein/rein.db``) holds them; in a store named by
URL, to no workspace in particular, so that only a command that names them acts on them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from rein.errors import Refused, StoreError
from rein.store.base import WorkspaceRef

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.store.base import RunRow, Store

FILE = Path(".rein") / "workspace.json"


def here(workspace: Path, *, create: bool = False) -> WorkspaceRef | None:
    """This workspace's identity (``workspace`` resolved), or ``None`` when it has none yet
    (it never started a run, or it is a copy that has not). ``create``: make one and keep
    it when there is none, or say where the workspace is now when it was moved (a command
    about to start a run)."""
    workspace = workspace.resolve()
    path = workspace / FILE
    found = _read(path)
    if found is not None and found.path == str(workspace):
        return found
    if create:
        try:
            with _locked(path):  # decided again, by one process at a time
                return _claim(path, str(workspace))
        except OSError as exc:
            raise StoreError(f"cannot keep this workspace's identity in {path}: "
                             f"{exc.strerror or exc}", code="WORKSPACE001",
                             hint="rein records there which workspace each run belongs to: "
                                  "make .rein/ writable") from exc
    return None if found is None else _seen_at(found, str(workspace))


def runs_here(store: Store, workspace: Path) -> list[RunRow]:
    """The top-level runs of ``workspace``, newest first: those it started, and those
    stored before runs recorded a workspace when ``store`` is this workspace's own
    embedded store."""
    ref = here(workspace)
    ids: list[str | None] = [] if ref is None else [ref.id]
    if _embedded(store, workspace):
        ids.append(None)
    return store.list_runs(workspaces=ids)


def belongs(run: RunRow, workspace: Path) -> bool:
    """Whether the top-level run ``run`` may be acted on from ``workspace``: it is this
    workspace's run, or it recorded no workspace (stored before runs did)."""
    if run.workspace is None:
        return True
    ref = here(workspace)
    return ref is not None and ref.id == run.workspace.id


def refuse_elsewhere(run: RunRow, workspace: Path, *, doing: str = "act on it",
                     refusal: type[Refused] = Refused) -> None:
    """``RUN010`` (raised as ``refusal``) unless ``run``, a top-level run, :func:`belongs`
    to ``workspace``."""
    ref = run.workspace
    if ref is None or belongs(run, workspace):
        return
    on = f"on {ref.host}: " if ref.host else ""
    raise refusal(f"run {run.run_id} belongs to the workspace {shown(ref)}, not to "
                  f"{workspace}: rein will not {doing} here, where its checks would run in "
                  "the wrong directory", code="RUN010",
                  hint=f"run the command in that workspace ({on}`cd {ref.path}`, or "
                       f"`--workspace {ref.path}`); reading the run works from anywhere "
                       f"(`rein runs show {run.run_id}`)")


def shown(ref: WorkspaceRef) -> str:
    """``/path/to/ws on host``, as a person reads which workspace a run belongs to."""
    return f"{ref.path} on {ref.host}" if ref.host else ref.path


def _embedded(store: Store, workspace: Path) -> bool:
    """Whether ``store`` is the SQLite file in ``workspace``'s own ``.rein/``."""
    return getattr(store, "url", None) == str((workspace / ".rein" / "rein.db").resolve())


def _host() -> str:
    import socket  # only when the file is made or moved: a read imports no network

    return socket.gethostname()


def _read(path: Path) -> WorkspaceRef | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc)) from exc
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise _unreadable(path, "not JSON") from exc
    if not (isinstance(data, dict) and isinstance(data.get("id"), str)
            and data["id"].startswith("ws-") and isinstance(data.get("path"), str)):
        raise _unreadable(path, 'not {"id": "ws-…", "path": …, "host": …}')
    return WorkspaceRef(id=data["id"], path=data["path"], host=str(data.get("host") or ""))


def _unreadable(path: Path, why: str) -> StoreError:
    return StoreError(f"{path} cannot be read: {why}", code="WORKSPACE001",
                      hint="restore it from a backup; deleting it makes this a new workspace, "
                           "and its runs are then another workspace's")


def _copied(found: WorkspaceRef) -> bool:
    """Whether the folder ``found`` was made for still holds it (see the module docstring)."""
    if found.host and found.host != _host():
        return True  # another machine's folder at another path: cannot look, so a copy
    try:
        original = _read(Path(found.path) / FILE)
    except StoreError:
        return False  # a damaged original no longer names it: moved
    return original is not None and original.id == found.id


def _seen_at(found: WorkspaceRef, where: str) -> WorkspaceRef | None:
    """The identity of a file ``found`` at ``where``, another path than it was made for:
    none for a copy, the same id for a moved workspace."""
    if found.host in ("", _host()) and _same_folder(found.path, where):
        return WorkspaceRef(id=found.id, path=where, host=found.host or _host())
    return None if _copied(found) else WorkspaceRef(id=found.id, path=where, host=_host())


def _same_folder(recorded: str, where: str) -> bool:
    """Whether the path a file was made for leads here (through a symbolic link)."""
    try:
        return Path(recorded).resolve() == Path(where)
    except OSError:
        return False


def _claim(path: Path, where: str) -> WorkspaceRef:
    """The identity kept at ``path`` for ``where``: the file's, said where it is now when
    the workspace moved; else a new one (the workspace had none, or is a copy)."""
    import secrets

    found = _read(path)
    if found is not None and found.path == where:
        return found  # another process made it, or moved it, a moment ago
    ref = None if found is None else _seen_at(found, where)
    if ref is None:
        ref = WorkspaceRef(id="ws-" + secrets.token_hex(16), path=where, host=_host())
    temp = path.with_name(f".workspace.{os.getpid()}.json")
    temp.write_text(json.dumps(ref.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)  # whole: a reader sees the old file or the new one
    return ref


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name("workspace.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, or rein dies
        yield


__all__ = ["FILE", "belongs", "here", "refuse_elsewhere", "runs_here", "shown"]
