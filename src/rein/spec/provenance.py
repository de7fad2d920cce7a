"""What a published plan was made from: the digests of the brief and the bundle's documents.

`rein spec` records them in ``specs/active/40-development-plan.json`` when it publishes;
`rein dev` recomputes them before it imports the plan (and on every turn of a flow built
from it) and refuses a plan whose specification changed since (``DEV010``). Only the
standard library: `rein dev` reads this on every turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.spec.paths import DOCUMENTS

SPECS = "specs"


def brief_files(workspace: Path) -> list[str]:
    """The briefs, as `rein dev` and `rein spec` read them: ``specs/*.md`` and ``*.txt``."""
    folder = workspace / SPECS
    if not folder.is_dir():
        return []
    return sorted(f"{SPECS}/{p.name}" for p in folder.glob("*")
                  if p.suffix in (".md", ".txt") and p.is_file())


def sources(workspace: Path) -> dict[str, str]:
    """Each brief and each document that exists → ``sha256:`` + hex of its bytes."""
    names = [*brief_files(workspace), *(path for _n, path, _t in DOCUMENTS)]
    out = {}
    for name in names:
        try:
            out[name] = "sha256:" + hashlib.sha256((workspace / name).read_bytes()).hexdigest()
        except OSError:
            continue
    return out


def changes(workspace: Path, plan: Any) -> list[str] | None:
    """What changed since ``plan`` was published (empty: nothing), or ``None`` when the plan
    does not say what it was made from (it was not published by `rein spec`)."""
    spec = plan.get("spec") if isinstance(plan, Mapping) else None
    recorded = spec.get("sources") if isinstance(spec, Mapping) else None
    if not isinstance(recorded, Mapping):
        return None
    now = sources(workspace)
    out = [f"{n} changed" for n in sorted(recorded) if n in now and now[n] != recorded[n]]
    out += [f"{n} was removed" for n in sorted(recorded) if n not in now]
    out += [f"{n} was added" for n in sorted(now) if n not in recorded]
    return out
