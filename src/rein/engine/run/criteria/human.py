"""The ``human`` criterion: a person confirms, through the engine's approval queue.

The prompt is a template rendered in the attempt's scope. The request carries a digest over
what the reviewer is shown (node, criterion, attempt, prompt and the outputs under review),
so an answer given for one version of the work can never approve another. The engine's
``ask_human`` may pause the run (raising its own signal): that propagates untouched.
Evidence is the reviewer's note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.engine.run.criteria.base import CriterionProblem, Verdict, render_template
from rein.engine.run.criteria.model import CriterionContext, HumanRequest
from rein.errors import DocumentError
from rein.formats.canonical import ags_digest


def request_digest(ctx: CriterionContext, criterion_id: str, prompt: str) -> str:
    """The digest an answer binds to (``sha256-`` + base64 over canonical JSON)."""
    subject = {
        "node_id": ctx.node_id,
        "criterion_id": criterion_id,
        "attempt": ctx.attempt,
        "prompt": prompt,
        "outputs": dict(ctx.outputs),
    }
    try:
        return ags_digest(subject)
    except DocumentError as exc:
        raise CriterionProblem(
            f"the outputs under review cannot be digested: {exc.message}") from exc


async def check(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """Ask a person; pass when they approve."""
    if ctx.ask_human is None:
        raise CriterionProblem(
            "no approval queue is available for human criteria",
            code="RT015",  # a required human interaction cannot be presented (AGS §15)
            hint="run where approvals can be answered (rein approvals), or relax the criterion",
        )
    cid = str(criterion.get("id", ""))
    prompt = render_template(str(criterion.get("prompt", "")), ctx, where="prompt")
    request = HumanRequest(
        node_id=ctx.node_id,
        criterion_id=cid,
        attempt=ctx.attempt,
        prompt=prompt,
        description=str(criterion.get("description", "")),
        roles=tuple(str(r) for r in criterion.get("roles") or ()),
        digest=request_digest(ctx, cid, prompt),
    )
    answer = await ctx.ask_human(request)
    verdict = "approved" if answer.approved else "declined"
    evidence = answer.note if answer.note else f"the reviewer {verdict} without a note"
    extra: dict[str, Any] = {"x-rein-decision": verdict}
    if answer.reviewer:
        extra["x-rein-reviewer"] = answer.reviewer
    return Verdict(passed=bool(answer.approved), evidence=evidence, extra=extra)
