"""``fs:read`` for commands: which parts of the workspace a sandboxed command can see.

A file tool is checked before it reads. A command (the shell tool, a command worker's CLI
agent) reads however it likes, so under bubblewrap it is given only what its ``fs:read``
grants name (:func:`read_binds`), bound read-only into a root that holds nothing else of the
machine's files but the system and the tools on its ``PATH`` (:mod:`rein.tools.sandbox`):

- ``src/**`` binds ``src``; a pattern with a wildcard binds the directory its literal part
  names (``src/*.py`` binds ``src``: the whole directory, which is wider than the grant);
  a path without a wildcard binds that file or directory; a grant without a target, ``**``
  or a pattern starting with a wildcard binds the whole workspace;
- the paths a deny pattern names (``fs:read:.env``, ``.git`` and ``.rein`` from rein's
  default ``deny_paths``) are masked inside what is bound (:func:`hidden_paths`): an empty
  read-only folder, or a file that cannot be opened (``/dev/null`` on a ``nodev`` mount).

Nothing is resolved outside the workspace: a symlink in the workspace that points elsewhere
leads nowhere inside the sandbox unless its target is bound for another reason. Without
bubblewrap there is no read confinement for commands at all (the process backend is not a
boundary, and says so).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from rein.tools.paths import is_within
from rein.tools.permissions import PermissionSet, target_matches

_WILDCARDS = set("*?[")
MAX_WALK = 200_000  # entries looked at for wildcard deny patterns; beyond: refused


class TooManyToMask(Exception):
    """A wildcard deny pattern would need a walk longer than :data:`MAX_WALK`."""


def read_binds(workspace: Path, permissions: PermissionSet) -> tuple[Path, ...]:
    """The paths of ``workspace`` to bind read-only for the ``fs:read`` grants: resolved,
    existing, inside the workspace, none below another; ``(workspace,)`` for a grant of it
    all, ``()`` when nothing may be read."""
    root = workspace.resolve()
    found: list[Path] = []
    for grant in permissions.grants:
        if (grant.scope, grant.action) != ("fs", "read"):
            continue
        base = root.joinpath(*_literal(grant.target))
        while base != root and not os.path.lexists(base):
            base = base.parent  # a path not there yet: its nearest existing parent
        resolved = base.resolve()
        if resolved.exists() and is_within(resolved, root):
            found.append(resolved)
    return _outermost(found)


def hidden_paths(workspace: Path, permissions: PermissionSet,
                 roots: Iterable[Path]) -> tuple[Path, ...]:
    """The paths below ``roots`` that an ``fs:read`` deny pattern covers, to be masked: a
    literal pattern (``.git``, ``secrets/**``) directly, a wildcard one (``**/.env``) by a
    walk of ``roots`` (:class:`TooManyToMask` past :data:`MAX_WALK` entries)."""
    root = workspace.resolve()
    denied = [d for d in permissions.denied if (d.scope, d.action) == ("fs", "read")]
    if not denied:
        return ()
    if any(d.target is None for d in denied):
        return (root,)
    out: list[Path] = []
    patterns: list[str] = []
    for deny in denied:
        assert deny.target is not None
        literal = _literal(deny.target)
        rest = _segments(deny.target)[len(literal):]
        if rest in ([], ["**"]) and literal:
            path = root.joinpath(*literal)
            if os.path.lexists(path):
                out.append(path)
        else:
            patterns.append(deny.target)
    if patterns:
        out += _walk(root, roots, patterns)
    return _outermost(out)


def _walk(root: Path, roots: Iterable[Path], patterns: list[str]) -> list[Path]:
    out: list[Path] = []
    seen = 0
    for top in roots:
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            base = Path(dirpath)
            kept = []
            for name in [*dirnames, *filenames]:
                seen += 1
                if seen > MAX_WALK:
                    raise TooManyToMask(f"more than {MAX_WALK} entries to look through")
                path = base / name
                relative = path.relative_to(root).as_posix()
                if any(target_matches("fs", p, relative) for p in patterns):
                    out.append(path)
                elif name in dirnames:
                    kept.append(name)
            dirnames[:] = kept
    return out


def _segments(target: str | None) -> list[str]:
    if target is None:
        return ["**"]
    path = target.replace("\\", "/").strip("/")
    parts = [p for p in PurePosixPath(path).parts if p not in ("", ".")]
    return parts or ["**"]


def _literal(target: str | None) -> list[str]:
    """The segments of ``target`` before the first one with a wildcard."""
    out: list[str] = []
    for segment in _segments(target):
        if _WILDCARDS & set(segment):
            break
        out.append(segment)
    return out


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    out: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path == o or o in path.parents for o in out):
            out.append(path)
    return tuple(out)


__all__ = ["MAX_WALK", "TooManyToMask", "hidden_paths", "read_binds"]

