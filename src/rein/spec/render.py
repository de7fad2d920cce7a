"""The specification flow's state as text for the agent and the person beside it (the JSON
is the data)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def render(where: Mapping[str, Any], *, instruction: bool = True) -> str:
    lines = [f"SPEC FLOW {where['reason'].upper()}: {where['message']}"]
    lines += [f"notice: {n}" for n in where.get("notices") or []]
    lines += ["", "documents (in order):"]
    for d in where.get("documents") or []:
        tries = f" ({d['attempts']} attempt{'s' if d['attempts'] != 1 else ''})" \
            if d["attempts"] else ""
        lines.append(f"  {d['status']:9} {d['path']}{tries}")
    if where.get("published"):
        lines.append(f"  published {where['plan']} ({where['published'].get('at')})")
    pending = where.get("instruction") or {}
    if instruction and pending.get("status") in ("instruction", "waiting"):
        from rein.workers.driver.status import render as render_status

        lines += ["", render_status(dict(pending)).rstrip()]
    lines += ["", f"next: {where['next_action']}"]
    return "\n".join(lines) + "\n"
