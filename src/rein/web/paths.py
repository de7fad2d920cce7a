"""The plan view reads graph files of the workspace, and nothing else."""

from __future__ import annotations

from pathlib import Path

from rein.web.auth import Denied

GRAPH_SUFFIXES = (".yaml", ".yml", ".json")
MAX_PATH = 1024


def inside(workspace: Path, given: str) -> str:
    """``given`` as a path relative to ``workspace``, resolved (links followed) and checked
    to stay inside it; WEB404 for anything else: absolute paths, ``..`` that climbs out, a
    link that points out, a file that is not a graph document, a missing file."""
    root = workspace.resolve()
    refused = Denied(404, "WEB404", f"no graph file {given[:200]!r} in the workspace",
                     "pick a file from the Plans page")
    if not given or len(given) > MAX_PATH or "\0" in given or Path(given).is_absolute():
        raise refused
    try:
        path = (root / given).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        raise refused from None
    if root not in path.parents or not path.is_file() or not path.name.endswith(GRAPH_SUFFIXES):
        raise refused
    return path.relative_to(root).as_posix()


__all__ = ["inside"]
