"""Workspace paths: resolve before matching, so neither ``..`` nor a symlink leaves the workspace.

Every file tool goes through :func:`resolve_in_workspace`. The path a model gives is joined to
the workspace, symlinks are resolved (also those of parent directories, and of a final
component that does not exist yet), and the result must still be inside the resolved
workspace. The workspace-relative POSIX form of the *resolved* path is what permission
patterns are matched against, so ``src/link -> ../secrets`` is checked as ``secrets``.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from rein.core.frozen import Frozen
from rein.errors import ReinError


class ToolFailure(ReinError):
    """A tool call could not be carried out; its message goes back to the model as the result."""

    default_code = "TOOL001"


class PathOutsideWorkspace(ToolFailure):
    """A path resolves outside the workspace (``..``, an absolute path, or a symlink)."""

    default_code = "TOOL010"


class WorkspacePath(Frozen):
    """A path inside the workspace: absolute (resolved) and workspace-relative (POSIX)."""

    absolute: Path
    relative: str  # "." for the workspace itself


def resolve_in_workspace(workspace: str | os.PathLike[str], path: str) -> WorkspacePath:
    """Resolve ``path`` (relative to ``workspace``, or absolute) and refuse anything outside."""
    root = Path(workspace).resolve()
    if not isinstance(path, str) or not path.strip():
        raise ToolFailure(
            "a path is required", code="TOOL011", hint="give a workspace-relative path"
        )
    if "\x00" in path:
        raise ToolFailure("a path may not contain NUL bytes", code="TOOL011")
    candidate = Path(path) if os.path.isabs(path) else root / path
    # strict=False still follows every symlink that exists along the way.
    resolved = candidate.resolve(strict=False)
    try:
        relative = resolved.relative_to(root)
    except ValueError:
        raise PathOutsideWorkspace(
            f"{path!r} is outside the workspace",
            hint="use a path inside the workspace, relative to its root "
            "(symlinks are followed before this check)",
        ) from None
    rel = PurePosixPath(*relative.parts).as_posix() if relative.parts else "."
    return WorkspacePath(absolute=resolved, relative=rel)


def is_within(path: Path, root: Path) -> bool:
    """Whether resolved ``path`` is ``root`` or below it (both resolved first)."""
    try:
        path.resolve(strict=False).relative_to(root.resolve(strict=False))
    except ValueError:
        return False
    return True
