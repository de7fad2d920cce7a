"""``fs:write`` for commands: writable binds where a grant is a directory, a check for the rest.

A file tool is checked before it writes. A command (the shell tool, a command worker's CLI
agent) writes however it likes, so its ``fs:write`` grants are enforced in two layers:

1. **Binds.** Under bubblewrap the workspace is read-only, and only the directories the
   grants name are bound writable (:func:`write_binds`): ``docs/**`` binds ``docs``. A grant
   that is not a whole directory (``src/*.py``, ``README.md``) binds the directory it lies in,
   and a directory that does not exist yet binds its nearest existing parent.
2. **A before/after check.** Every entry below the writable part of the workspace is
   recorded (``lstat``: type, mode, inode, size, mtime and ctime, which no process can set
   back) before the command and compared after it (:func:`changed_paths`); each path that
   appeared, vanished or changed must be covered by an ``fs:write`` grant and not be
   protected (:func:`outside_grants`). Without bubblewrap (no namespaces) this check, over
   the whole workspace, is the only enforcement.

The check detects; it does not undo. A command that wrote outside its grants fails (the
shell call is refused, the attempt fails as ``permission_denied``) and the message names the
paths. rein's state directory ``.rein`` is never walked (rein itself writes there during a
command), nor are git's ``objects``, ``logs`` and ``index`` (git rewrites them on reads).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from rein.tools.paths import is_within
from rein.tools.permissions import Permission, PermissionSet

Entry = tuple[int, ...]
_UNWALKED = (".rein", ".git/objects", ".git/logs", ".git/index")
_WILDCARDS = set("*?")


def write_binds(workspace: Path, writes: PermissionSet) -> tuple[Path, ...]:
    """The directories of ``workspace`` to bind writable for ``writes``' ``fs:write`` grants.

    Resolved, inside the workspace, none below another; ``(workspace,)`` for a grant of the
    whole workspace, ``()`` when nothing may be written.
    """
    root = workspace.resolve()
    dirs: list[Path] = []
    for grant in writes.grants:
        if (grant.scope, grant.action) not in (("fs", "write"), ("fs", "create")):
            continue
        segments = _segments(grant.target)
        literal: list[str] = []
        for segment in segments:
            if _WILDCARDS & set(segment):
                break
            literal.append(segment)
        whole_dir = segments[len(literal) :] == ["**"]
        base = root.joinpath(*literal) if literal else root
        if not whole_dir and len(literal) == len(segments) and literal:
            base = base.parent  # a single path: the directory it lies in
        found = _existing_dir(base, root)
        if found is not None:
            dirs.append(found)
    return _outermost(dirs)


def _segments(target: str | None) -> list[str]:
    if target is None:
        return ["**"]
    path = target.replace("\\", "/").strip("/")
    parts = [p for p in PurePosixPath(path).parts if p not in ("", ".")]
    return parts or ["**"]


def _existing_dir(path: Path, root: Path) -> Path | None:
    """``path`` or its nearest existing parent, resolved; None if that leaves the workspace
    (a symlinked directory pointing outside is never bound writable)."""
    while True:
        if path.is_dir():
            resolved = path.resolve()
            return resolved if is_within(resolved, root) else None
        if path == root or root not in path.parents:
            return None
        path = path.parent


def _outermost(dirs: Iterable[Path]) -> tuple[Path, ...]:
    out: list[Path] = []
    for d in sorted(set(dirs), key=lambda p: len(p.parts)):
        if not any(d == o or o in d.parents for o in out):
            out.append(d)
    return tuple(out)


def snapshot(workspace: Path, roots: Sequence[Path]) -> dict[str, Entry]:
    """Every entry below ``roots`` (within ``workspace``), by workspace-relative POSIX path."""
    top = workspace.resolve()
    out: dict[str, Entry] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            base = Path(dirpath)
            rel_dir = base.relative_to(top).as_posix() if base != top else ""
            kept = []
            for name in [*dirnames, *filenames]:
                rel = f"{rel_dir}/{name}" if rel_dir else name
                entry = None if rel in _UNWALKED else _entry(base / name)
                if entry is None:
                    continue
                out[rel] = entry
                if name in dirnames and stat.S_ISDIR(entry[0]):
                    kept.append(name)  # a symlink to a directory is an entry, not walked
            dirnames[:] = kept
    return out


def _entry(path: Path) -> Entry | None:
    try:
        info = path.lstat()
    except OSError:
        return None  # gone while we looked
    if stat.S_ISDIR(info.st_mode):
        # A directory's times change whenever an entry does; the entries themselves count.
        return (info.st_mode, info.st_ino)
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def changed_paths(
    before: Mapping[str, Entry], after: Mapping[str, Entry]
) -> dict[str, str]:
    """``{path: "created" | "deleted" | "modified"}`` between two snapshots."""
    out: dict[str, str] = {}
    for path in before.keys() | after.keys():
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        out[path] = "created" if old is None else "deleted" if new is None else "modified"
    return dict(sorted(out.items()))


def directories(*snapshots: Mapping[str, Entry]) -> set[str]:
    """The paths that are directories in any of ``snapshots``."""
    return {p for snap in snapshots for p, e in snap.items() if stat.S_ISDIR(e[0])}


def outside_grants(
    changes: Mapping[str, str],
    writes: PermissionSet,
    *,
    protected: Iterable[str] = (),
    directories: Iterable[str] = (),
) -> tuple[str, ...]:
    """The changed paths no grant covers: a modification needs ``fs:write``, a new path
    ``fs:write`` or ``fs:create``, a removed one ``fs:write`` or ``fs:delete``; a protected
    path is never covered. A new or removed directory is covered by a covered path below it
    (creating ``docs/a/`` to hold ``docs/a/x.md``)."""
    guarded = tuple(protected)
    dirs = set(directories)

    def covered(path: str, how: str) -> bool:
        if any(path == p or path.startswith(p + "/") for p in guarded):
            return False
        actions = {"created": ("write", "create"), "deleted": ("write", "delete")}
        return any(
            writes.allows(Permission(scope="fs", action=a, target=path))
            for a in actions.get(how, ("write",))
        )

    ok = {p for p, how in changes.items() if p not in dirs and covered(p, how)}
    out = []
    for path, how in changes.items():
        if path in ok:
            continue
        if path in dirs and (covered(path, how) or any(o.startswith(path + "/") for o in ok)):
            continue
        out.append(path)
    return tuple(out)
