"""Trajectories out of an evaluation, laid out as Harbor lays out a job: one folder per
trial holding ``agent/trajectory.json`` (ATIF), so that Harbor's viewer and tools read them."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def export_atif(result: Mapping[str, Any], target: Path) -> int:
    """Copy every trial's trajectory under ``target``; the number of files written."""
    written = 0
    for trial in result.get("trials") or []:
        folder = trial.get("folder")
        source = Path(folder) / "agent" / "trajectory.json" if folder else None
        if source is None or not source.is_file():
            continue
        out = target / str(trial["trial"]) / "agent" / "trajectory.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out)
        written += 1
    return written


__all__ = ["export_atif"]
