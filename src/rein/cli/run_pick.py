"""Which run a ``rein runs`` command reads: the one named, or the newest of the workspace.

``rein next`` picks the newest run when none is named; ``runs show|watch|events|record``
do the same, so that the common case needs no id to be copied. The newest run of *this*
workspace: a store may be shared by several (:mod:`rein.store.workspace_id`), and a run
named by its id is read wherever it belongs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rein.cli.workspace import open_harness, resolve_workspace
from rein.errors import ReinError


def reads(workspace: Path | None) -> Any:
    """The Harness, for reading: no store is created, and a missing one is RUN404 for the
    run asked about (as when the store does not know it)."""
    return open_harness(resolve_workspace(workspace), create=False)


def pick_run(harness: Any, run_id: str | None) -> Any:
    """The run ``run_id`` names, or the newest top-level run of the workspace; RUN404 when
    there is none."""
    try:
        if run_id is not None:
            return harness.run(run_id)
        newest = harness.runs_here()
    except ReinError as exc:
        if exc.code != "STORE404":
            raise
        if run_id is not None:
            raise ReinError(f"no run {run_id!r}", code="RUN404",
                            hint="list runs with `rein runs list --all`") from exc
        newest = []
    if not newest:
        raise ReinError("no runs in this workspace yet", code="RUN404",
                        hint="start one with `rein run GRAPH`, or name the run")
    return newest[0]


__all__ = ["pick_run", "reads"]
