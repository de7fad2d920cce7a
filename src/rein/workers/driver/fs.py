"""What a driver wrote: the file system before an instruction, compared with it after.

The driver uses its own tools, so rein cannot refuse a write as it happens. What it can do
is look afterwards, at the file system itself: git is asked for detail (the refs), never
for what changed, because an index flag (``skip-worktree``, ``assume-unchanged``), an
exclude entry, a ``.gitignore`` or a workspace outside git all hide changes from
``git status``.

When the instruction is issued, :func:`snapshot` walks the workspace (symlinks are not
followed) and records, per path, its kind and a *digest*: the content hash of a file, the
target of a link. To stay fast on large trees a file's hash is reused from the previous
snapshot when its size, mtime, ctime, inode and mode are all unchanged (the ctime cannot be
set back by a program, so a rewrite always shows), and a file modified within
:data:`RACY_NS` of a snapshot is hashed again whatever its stat says. On submit a second
snapshot is compared with the first (:func:`written_paths`), and what changed is sorted:
tool caches (:data:`TOOL_CACHES`) are reported but not the driver's work; git's own
bookkeeping (objects, index, logs) is skipped; refs and ``HEAD`` moving need ``git:commit``;
everything else is checked against the node's ``fs:write`` grants (:func:`writes_outside`),
except what no grant covers: the rest of ``.git`` (``config``, ``hooks``, ``info/exclude``:
what git runs), ``rein.toml`` and every workspace file a configured hook or command worker
runs (``rein.tools.sandbox.protected_paths``). rein's ``.rein/`` is never counted: rein's
own processes write there while the driver works, and the answer files (``inbox.json``)
are the driver's to write.

An agent's own sandbox may put things in the workspace that the agent did not write, seen
only inside its commands: the Codex CLI mounts empty read-only directories (``.agents``,
``.aws``, ``.codex``), Claude Code an empty ``.claude`` and ``/dev/null`` over the files it
protects (``.bashrc``, ``.gitconfig``, ``.mcp.json``, ``.git/config.worktree``...). A
snapshot notes every mount point below the workspace, and what is a mount point in one
snapshot and absent from the other, if it is an empty directory or a character device, is
set aside as a sandbox mount (:func:`sandbox_mounts`), never counted as a write. Anything
inside such a directory, and anything that is not a mount point, still is.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.hashing import file_sha256

VERSION = 2  # the snapshot format stored with a turn
STATE_DIR = ".rein"
STATE_PREFIX = ".rein/"
_WRITE_ACTIONS = ("write", "create", "delete")  # fs actions that may change a path
_MAX_HASH_BYTES = 64 * 1024 * 1024  # larger files are compared by their stat alone
MAX_ENTRIES = 500_000  # a bound on one walk; beyond it the snapshot says it is partial
RACY_NS = 1_000_000_000  # timestamps this close to a snapshot are too coarse to trust

# Directory names and file suffixes that test and lint tools write as a side effect of
# running them (bytecode, caches): reported as ``ignored``, never counted as a write.
TOOL_CACHES: tuple[str, ...] = ("__pycache__", ".pytest_cache", ".mypy_cache",
                                ".ruff_cache", ".hypothesis")
TOOL_CACHE_SUFFIXES: tuple[str, ...] = (".pyc", ".pyo")

# git's bookkeeping, rewritten by read-only commands (`git status` refreshes the index):
# not walked (objects) or not compared. Refs are compared as refs, not as files.
_GIT_SKIP_DIRS = frozenset({".git/objects", ".git/logs", ".git/lfs"})
_GIT_VOLATILE = frozenset({".git/index", ".git/FETCH_HEAD", ".git/ORIG_HEAD",
                           ".git/COMMIT_EDITMSG", ".git/gc.log", ".git/gc.pid",
                           ".git/AUTO_MERGE"})
_GIT_REFS = (".git/HEAD", ".git/packed-refs", ".git/refs")


def _stat_key(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_mode]


def _entry(path: str, info: os.stat_result, old: Sequence[Any] | None, started: int
           ) -> list[Any]:
    """``[kind, digest, stat, racy]`` for one path (see the module docstring). ``path`` is
    a plain string: most entries are only stat-compared, and a Path per entry would cost
    more than the comparison."""
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return ["link", os.readlink(path), None, False]
    if stat.S_ISDIR(mode):
        return ["dir", "dir", None, False]
    if not stat.S_ISREG(mode):
        return ["other", f"mode:{stat.S_IFMT(mode):o}", None, False]
    key = _stat_key(info)
    racy = max(info.st_mtime_ns, info.st_ctime_ns) >= started - RACY_NS
    exec_bit = "x" if mode & 0o111 else "-"
    if old is not None and old[0] == "file" and old[2] == key and not old[3] and not racy:
        return ["file", old[1], key, False]  # unchanged stat: the stored hash still holds
    if info.st_size > _MAX_HASH_BYTES:
        digest = "stat:" + ":".join(str(k) for k in key)
    else:
        try:
            digest = file_sha256(path) + exec_bit
        except OSError as exc:
            digest = f"unreadable:{exc.errno}"
    return ["file", digest, key, racy]


_CHAR_DEVICE = f"mode:{stat.S_IFCHR:o}"  # the digest of a character device's entry
_MOUNTINFO_ESCAPES = (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\"))


def _mount_points(root: Path) -> set[str]:
    """The mount points strictly below ``root``, relative to it, as this process sees them
    (``/proc/self/mountinfo``; empty where it cannot be read)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    base = str(root.resolve()).rstrip("/") + "/"
    out: set[str] = set()
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        # The kernel escapes space, tab, newline and backslash in octal (\040...).
        point = fields[4]
        for code, char in _MOUNTINFO_ESCAPES:
            point = point.replace(code, char)
        if point.startswith(base):
            out.add(point[len(base):])
    return out


def snapshot(workspace: str | Path, previous: Mapping[str, Any] | None = None
             ) -> dict[str, Any]:
    """The workspace as it is now: ``{"version", "root", "taken_ns", "entries", "refs",
    "partial", "mounts"}``; ``entries`` maps relative POSIX paths to ``[kind, digest,
    stat, racy]``, and ``mounts`` lists the directories below the workspace that are mount
    points (another file system, as an agent's sandbox mounts them).

    ``previous`` (an earlier snapshot of the same workspace) lends its hashes to files whose
    stat did not change.
    """
    root = Path(workspace)
    started = time.time_ns()
    mounts = _mount_points(root)
    try:
        device = root.stat().st_dev
    except OSError:
        device = -1
    old: Mapping[str, Any] = (previous or {}).get("entries") or {} \
        if (previous or {}).get("version") == VERSION else {}
    entries: dict[str, list[Any]] = {}
    partial = False
    stack = [("", "")]  # (the directory as named in entries, as on disk)
    while stack:
        rel_dir, disk_dir = stack.pop()
        try:
            with os.scandir(root / disk_dir if disk_dir else root) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError:
            continue  # vanished or unreadable: what is inside cannot be told
        for child in children:
            name = text_name(child.name)
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if rel == STATE_DIR or rel in _GIT_SKIP_DIRS:
                continue
            if len(entries) >= MAX_ENTRIES:
                partial = True
                break
            try:
                info = child.stat(follow_symlinks=False)
            except OSError:
                continue
            entries[rel] = _entry(child.path, info, old.get(rel), started)
            if stat.S_ISDIR(info.st_mode):
                stack.append((rel, f"{disk_dir}/{child.name}" if disk_dir else child.name))
                if info.st_dev != device:  # another file system: a mount point
                    mounts.add(rel)
    return {"version": VERSION, "root": str(root.resolve()), "taken_ns": started,
            "entries": entries, "refs": _refs(root), "partial": partial,
            "mounts": sorted(m for m in mounts if m in entries),
            # As configured when it was taken: a driver that rewrites rein.toml to drop a
            # hook does not free the hook's script by it.
            "protected": list(protected_in(root))}


def text_name(name: str) -> str:
    """A file name as text that can be stored: a name that is not UTF-8 (its odd bytes
    decoded as surrogates) is written with those bytes as ``\\xNN``."""
    if name.isascii():  # nearly every name: a flag of the string, no encoding
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def _refs(root: Path) -> dict[str, str] | None:
    """Every ref and ``HEAD`` → commit, as ``git show-ref --head`` lists them: read from the
    repository's files (:mod:`rein.tools.git_files`), and from git only for a repository
    they cannot say. Every instruction and every answer takes a snapshot: starting a
    process for it cost each driver turn a ``git`` run."""
    from rein.tools.git_files import Unreadable, read_refs

    try:
        return read_refs(root)
    except (Unreadable, OSError):
        from rein.tools.gitguard import git_refs

        return git_refs(root)


def sandbox_mounts(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Paths present in only one of two snapshots as a mount point there that is an empty
    directory or a character device (``/dev/null`` bound over a path): what an agent's
    sandbox mounts over the workspace, not the agent's writes. A mount point holding
    anything, or a path that is not one, is not among them."""
    out: list[str] = []
    for one, other in ((after, before), (before, after)):
        entries: Mapping[str, Sequence[Any]] = one.get("entries") or {}
        elsewhere: Mapping[str, Sequence[Any]] = other.get("entries") or {}
        for path in one.get("mounts") or ():
            entry = entries.get(path)
            if entry is None or path in elsewhere:
                continue
            device = entry[0] == "other" and entry[1] == _CHAR_DEVICE
            empty = entry[0] == "dir" and not any(p.startswith(path + "/") for p in entries)
            if device or empty:
                out.append(path)
    return sorted(set(out))


def written_paths(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Paths created, deleted or changed between two snapshots (a directory only when it
    appeared or vanished with nothing below it that changed), sorted."""
    old: Mapping[str, Sequence[Any]] = before.get("entries") or {}
    new: Mapping[str, Sequence[Any]] = after.get("entries") or {}
    changed: set[str] = set()
    for path in set(old) | set(new):
        a, b = old.get(path), new.get(path)
        if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
            changed.add(path)
    parents = {p.rsplit("/", i)[0] for p in changed for i in range(1, p.count("/") + 1)}
    dirs = {p for p in changed & parents if (old.get(p) or new.get(p) or ["?"])[0] == "dir"}
    dirs |= set(sandbox_mounts(before, after))
    return sorted(p for p in changed - dirs
                  if not p.startswith(STATE_PREFIX) and p not in _GIT_VOLATILE
                  and not p.endswith(".lock"))


def tool_cache(path: str) -> bool:
    """Whether ``path`` lies in a tool cache (:data:`TOOL_CACHES`), outside ``.git``."""
    parts = path.split("/")
    if parts[0] == ".git":
        return False
    return any(p in TOOL_CACHES for p in parts) or parts[-1].endswith(TOOL_CACHE_SUFFIXES)


def git_ref_path(path: str) -> bool:
    """Whether ``path`` is where git keeps ``HEAD`` or a ref."""
    return any(path == r or path.startswith(r + "/") for r in _GIT_REFS)


def moved_refs(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Refs (``HEAD`` included) that appeared, vanished or moved, by git's account."""
    from rein.tools.gitguard import moved_refs as moved

    return moved(before.get("refs"), after.get("refs"))


def write_grants(permissions: Iterable[str]) -> list[str]:
    """The path patterns a node may change: targets of ``fs:write`` / ``fs:create`` /
    ``fs:delete`` grants (``**`` for a grant without a target)."""
    out: list[str] = []
    for text in permissions:
        parts = str(text).split(":", 2)
        if len(parts) >= 2 and parts[0] == "fs" and parts[1] in _WRITE_ACTIONS:
            out.append(parts[2] if len(parts) == 3 and parts[2] else "**")
    return out


def writes_outside(paths: Sequence[str], permissions: Iterable[str],
                   protected: Iterable[str] = ()) -> list[str]:
    """The paths of ``paths`` that no ``fs:write`` grant of ``permissions`` covers; a path
    in ``.git`` or in ``protected`` is never covered."""
    from rein.tools.permissions import target_matches

    grants = write_grants(permissions)
    guarded = (".git", *protected)
    return [p for p in paths
            if any(p == g or p.startswith(g + "/") for g in guarded)
            or not any(target_matches("fs", g, p) for g in grants)]


def compare(before: Mapping[str, Any], after: Mapping[str, Any],
            permissions: Sequence[str], protected: Iterable[str] = ()) -> dict[str, Any]:
    """The write checks of one submit: what was written, what of it no grant covers (or
    is protected: ``protected``, or so in either snapshot), tool caches set aside, and refs
    that moved."""
    protected = [*protected, *(before.get("protected") or ()), *(after.get("protected") or ())]
    written = written_paths(before, after)
    ignored = [p for p in written if tool_cache(p)]
    # git's account of the refs, and the ref files themselves (named as git names them).
    refs = sorted(set(moved_refs(before, after))
                  | {p.removeprefix(".git/") for p in written if git_ref_path(p)})
    work = [p for p in written if not tool_cache(p) and not git_ref_path(p)]
    outside = writes_outside(work, permissions, protected)
    out: dict[str, Any] = {
        "written": work[:200], "writes_outside": outside[:200],
        "head_moved": bool(refs), "refs_moved": refs[:50],
        "commit_allowed": any(str(p).startswith("git:commit") for p in permissions)}
    if len(work) > 200 or len(outside) > 200:  # the lists are cut: say how long they were
        out["counts"] = {"written": len(work), "writes_outside": len(outside)}
    if ignored:
        out["ignored"] = {"tool_caches": len(ignored), "examples": ignored[:5]}
    mounted = sandbox_mounts(before, after)
    if mounted:  # said, so that a reader sees why an empty directory was not a write
        out.setdefault("ignored", {})["sandbox_mounts"] = mounted[:50]
    if before.get("partial") or after.get("partial"):
        out["unchecked"] = (f"the workspace holds more than {MAX_ENTRIES} paths: only the "
                            "first were compared")
    return out


def measure(workspace: str | Path, turn: Any, now: dt.datetime,
            baseline: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """What rein checks when an envelope for ``turn`` arrives: ``(checks, after)``.

    ``checks`` (stored with the answer) holds the writes since ``baseline`` (default: the
    turn's own) against the node's ``fs:write`` grants, refs moving, and the wall-clock time
    the instruction took against its limit; ``after`` is the snapshot taken now.
    """
    instruction = turn.instruction
    base = baseline if baseline is not None else turn.baseline
    permissions = list(instruction.get("permissions") or [])
    after = snapshot(workspace, previous=base)
    if base.get("version") == VERSION:
        out = compare(base, after, permissions)
    else:  # a turn issued before snapshots walked the file system
        out = {"unchecked": "the instruction was issued by an older rein, whose snapshot "
                            "cannot be compared: writes were not checked"}
    started = dt.datetime.fromisoformat(str(turn.created_at))
    elapsed = max(0.0, (now - started).total_seconds())
    limit = ((instruction.get("budget") or {}).get("enforced") or {}).get(
        "max_wall_clock_seconds")
    out["elapsed_seconds"] = round(elapsed, 3)
    if limit is not None:
        out["limit_seconds"] = limit
        out["timed_out"] = elapsed > float(limit)
    return out, after


def protected_in(workspace: str | Path) -> tuple[str, ...]:
    """What no driver may write in ``workspace``, from its configuration as it is now
    (rein's own list alone when the configuration cannot be read). A workspace without a
    ``rein.toml`` anywhere is answered without reading one: a driver turn stays fast."""
    from rein.core.config_places import any_config
    from rein.errors import ReinError
    from rein.tools.sandbox import protected_paths

    root = Path(workspace)
    if not any_config(root):
        return protected_paths(None, root)
    from rein.config import load_config

    try:
        return protected_paths(load_config(root), root)
    except ReinError:
        return protected_paths(None, root)


__all__ = ["TOOL_CACHES", "TOOL_CACHE_SUFFIXES", "compare", "git_ref_path", "measure",
           "moved_refs", "protected_in", "sandbox_mounts", "snapshot", "tool_cache",
           "write_grants", "writes_outside", "written_paths"]
