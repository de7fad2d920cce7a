"""The flow's state as text for the agent and the person beside it (the JSON is the data)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MARK = {"succeeded": "done", "failed": "FAILED", "planned": "planned", "pending": "planned",
         "running": "working", "waiting": "working", "skipped": "not run", "blocked": "blocked",
         "cancelled": "cancelled"}


def render(where: Mapping[str, Any], *, instruction: bool = True) -> str:
    lines = [f"DEV FLOW ({where['stage']}) {where['reason'].upper()}: {where['message']}"]
    lines += [f"notice: {n}" for n in where.get("notices") or []]
    features = where.get("features") or []
    if features:
        lines.append("")
        lines.append("features (in build order):")
        for f in features:
            tries = f" ({f['attempts']} attempt{'s' if f['attempts'] != 1 else ''})" \
                if f["attempts"] else ""
            earlier = f" (as {f['commit']}, under an earlier plan)" \
                if f["status"] == "committed" else ""
            lines.append(f"  {_MARK.get(f['status'], f['status']):8} {f['id']}: "
                         f"{f['title']}{tries}{earlier}")
    plan = where.get("plan")
    if plan:
        shown = f", {plan['shown']}" if plan.get("shown") else ""
        lines += ["", (f"the feature graph to approve: {plan['path']} (digest "
                  f"{plan.get('digest')}{shown})")]
        if plan.get("changed"):
            lines.append(f"  CHANGED: {plan['path']} is no longer this content: an accept is "
                         "refused until it is (the approval binds what is drawn here)")
        lines += ["", str(plan.get("text", "")).rstrip(), "",
                  "```mermaid", str(plan.get("mermaid", "")).rstrip(), "```"]
        verify = plan.get("verify") or {}
        if verify:
            lines += ["", "verify commands (run by rein, without a shell):"]
            lines += [f"  {node}: {command}" for node, command in verify.items()]
        kept = plan.get("committed") or []
        if kept:
            lines += ["", ("not built again (committed under an earlier plan with the same "
                      "definition; rein ran their verify on the current tree and it passed):")]
            lines += [f"  {c['feature']}: {c['title']} ({c['commit']})" for c in kept]
    pending = where.get("instruction") or {}
    if instruction and pending.get("status") in ("instruction", "waiting"):
        from rein.workers.driver.status import render as render_status

        lines += ["", render_status(dict(pending)).rstrip()]
    lines += ["", f"next: {where['next_action']}"]
    return "\n".join(lines) + "\n"
