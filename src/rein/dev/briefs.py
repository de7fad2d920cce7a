"""The flow's inputs: the briefs in ``specs/``, or a plan that already exists.

Briefs are ``specs/*.md`` and ``specs/*.txt``, alphabetically, each under a ``## name``
heading, up to a cap in bytes; anything past the cap is left out and *said* (in the brief
the driver reads and in what `rein dev` prints), never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import ReinError

SPECS = "specs"
IMPORTS = ("feature_list.json", "specs/active/40-development-plan.json")


class Briefs(Frozen):
    """The briefs as the driver reads them: `rein dev` reads them on every turn to notice a
    change."""

    text: str
    digest: str  # of the files as read (all of them, capped or not): a change is noticed
    notices: tuple[str, ...]


def read_briefs(workspace: Path, cap: int) -> Briefs:
    folder = workspace / SPECS
    files = sorted(p for p in folder.glob("*") if p.suffix in (".md", ".txt") and p.is_file()
                   ) if folder.is_dir() else []
    if not files:
        raise ReinError(f"no brief in {SPECS}/ (*.md or *.txt) and no plan to import",
                        code="DEV007", hint=f"describe what to build in {SPECS}/brief.md, or "
                        f"put a plan in {IMPORTS[0]}")
    digest = hashlib.sha256()
    parts: list[str] = []
    size = 0
    notices: list[str] = []
    for path in files:
        data = path.read_bytes()
        name = os.fsencode(path.name)  # a name need not be UTF-8: its bytes, as for the text
        digest.update(name + b"\0" + data + b"\0")
        section = (f"## {name.decode('utf-8', errors='replace')}\n\n"
                   f"{data.decode('utf-8', errors='replace').strip()}\n\n")
        raw = section.encode("utf-8")
        if size + len(raw) > cap:
            left = max(cap - size, 0)
            parts.append(raw[:left].decode("utf-8", errors="ignore"))
            note = (f"the briefs are {_total(files)} bytes; only the first {cap} are read "
                    f"([dev] max_brief_bytes), from {path.name} on the rest is left out")
            parts.append(f"\n\n[rein: {note}]\n")
            notices.append(note)
            break
        parts.append(section)
        size += len(raw)
    return Briefs(text="".join(parts).strip() + "\n", digest=digest.hexdigest(),
                  notices=tuple(notices))


def read_import(workspace: Path) -> tuple[str, Any] | None:
    """An existing plan file to import instead of asking for one: (its name, its data)."""
    for name in IMPORTS:
        path = workspace / name
        if path.is_file():
            try:
                return name, json.loads(path.read_bytes()[:1_000_001])
            except (ValueError, UnicodeDecodeError) as exc:
                raise ReinError(f"{name} is not valid JSON: {exc}", code="DEV006",
                                hint=f"fix {name}, or move it away to plan from the "
                                     "briefs") from exc
    return None


def _total(files: list[Path]) -> int:
    return sum(p.stat().st_size for p in files)
