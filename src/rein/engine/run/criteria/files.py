"""The ``file_exists`` and ``artifact_present`` criteria: was something actually produced?

``file_exists`` looks only inside the workspace: absolute paths and ``..`` are refused, and
a match reached through a symlink that points outside does not count. ``artifact_present``
looks at the attempt's outputs: the named output must be there and not empty (not null,
not ``""``, not ``[]``, not ``{}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from rein.engine.run.criteria.base import (
    CriterionProblem,
    Verdict,
    confined,
    inside,
    refuse_nul,
)
from rein.engine.run.criteria.model import CriterionContext

_GLOB_CHARS = frozenset("*?[")
# A glob over a huge tree (node_modules, .git) must not run unbounded.
MAX_SCANNED = 100_000


async def check_file_exists(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """At least one file matching ``path`` (a path or glob) with ``min_bytes`` or more."""
    pattern = criterion.get("path")
    if not isinstance(pattern, str) or not pattern.strip():
        raise CriterionProblem("file_exists criterion needs a non-empty 'path'")
    min_bytes = criterion.get("min_bytes", 0)
    if not isinstance(min_bytes, int) or isinstance(min_bytes, bool) or min_bytes < 0:
        raise CriterionProblem(f"min_bytes must be a non-negative integer, got {min_bytes!r}")
    root = ctx.workspace.resolve()
    normal = pattern.replace("\\", "/")
    if _GLOB_CHARS.isdisjoint(normal):
        candidates = [confined(ctx.workspace, normal, what="path")]
    else:
        _refuse_escape(normal)
        candidates = _glob(root, normal)

    found = [(p, p.stat().st_size) for p in candidates if p.is_file() and inside(root, p)]
    for path, size in found:
        if size >= min_bytes:
            return Verdict(passed=True, evidence={"path": _rel(root, path), "bytes": size})
    evidence: dict[str, Any] = {"path": pattern, "matched": len(found), "min_bytes": min_bytes}
    if found:
        largest = max(found, key=lambda item: item[1])
        evidence["largest"] = {"path": _rel(root, largest[0]), "bytes": largest[1]}
    return Verdict(passed=False, evidence=evidence)


def _refuse_escape(pattern: str) -> None:
    refuse_nul(pattern, what="path")
    pure = PurePosixPath(pattern)
    if pure.is_absolute() or pattern[1:3] in (":/", ":\\"):
        raise CriterionProblem(
            f"path {pattern!r} is absolute; it must be relative to the workspace",
            code="CRIT002",
            hint="write the glob relative to the workspace root",
        )
    if ".." in pure.parts:
        raise CriterionProblem(
            f"path {pattern!r} climbs out with '..'",
            code="CRIT002",
            hint="criteria may only look inside the workspace",
        )


def _glob(root: Path, pattern: str) -> list[Path]:
    matches: list[Path] = []
    for scanned, path in enumerate(root.glob(pattern)):
        if scanned >= MAX_SCANNED:
            raise CriterionProblem(
                f"path {pattern!r} matches more than {MAX_SCANNED} entries",
                hint="narrow the glob",
            )
        matches.append(path)
    return sorted(matches)


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.resolve().relative_to(root).as_posix()


def is_empty(value: Any) -> bool:
    """AGS §10.2 reading of "non-empty": not null, not "", not [], not {}."""
    return value is None or (isinstance(value, (str, list, tuple, dict)) and len(value) == 0)


async def check_artifact_present(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """The named output was produced and is not empty."""
    name = criterion.get("output")
    if not isinstance(name, str) or not name:
        raise CriterionProblem("artifact_present criterion needs an 'output' name")
    if name not in ctx.outputs:
        return Verdict(passed=False, evidence=f"output {name!r} was not produced")
    value = ctx.outputs[name]
    if is_empty(value):
        shown = "null" if value is None else repr(value)
        return Verdict(passed=False, evidence=f"output {name!r} is empty ({shown})")
    return Verdict(passed=True, evidence=f"output {name!r} is present ({_describe(value)})")


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"string of {len(value)} characters"
    if isinstance(value, (list, tuple)):
        return f"array of {len(value)} items"
    if isinstance(value, dict):
        return f"object with {len(value)} keys"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__
