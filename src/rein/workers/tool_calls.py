"""One tool call of a model attempt: the argument check, the verdict, a person's answer.

A built-in tool is checked by the toolbox (permissions, sandbox, ``ask`` rules); a profile
session's own tool (MCP, memory, ``note_learning``) by the effective profile. A call in
``ask`` goes to the run's approval queue when the engine offers one (``request.session``),
bound to the exact call by :func:`action_digest`; outside a run it goes to the worker's
``approver``, and without one it is treated as denied and the model is told why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from rein.core.frozen import Frozen
from rein.formats.canonical import canonical_json
from rein.providers.types import ModelToolCall
from rein.tools.catalog import ToolCall
from rein.tools.gate import Verdict
from rein.tools.toolbox import Toolbox
from rein.workers.base import Answer, AttemptRequest
from rein.workers.session_tools import SessionTools


class ApprovalAsk(Frozen):
    """A tool call waiting for a person. ``action_digest`` binds the answer to the exact call."""

    run_id: str
    node_id: str
    attempt: int
    tool: str
    arguments: Mapping[str, Any]
    permission: str
    message: str
    action_digest: str


Approver = Callable[[ApprovalAsk], Awaitable[Answer]]


class Waiting(Frozen, kw_only=False):
    """A tool call's approval is queued and unanswered: the attempt must pause."""

    approval_id: str


class _Asked(Frozen):
    """A session tool's ``ask``, shaped like a toolbox decision for :func:`_answer`."""

    permission: str
    message: str


#: (content, ok, refused) for the model; ``Waiting`` while a person has not answered; None
#: when a person cancelled the attempt.
ToolOutcome = tuple[str, bool, bool] | Waiting | None


def action_digest(call: ModelToolCall) -> str:
    """``sha256:`` + hex of the canonical JSON of the exact call (tool and arguments)."""
    action = {"tool": call.name, "arguments": dict(call.arguments)}
    return "sha256:" + hashlib.sha256(canonical_json(action)).hexdigest()


async def run_tool(
    request: AttemptRequest,
    box: Toolbox,
    call: ModelToolCall,
    extra: SessionTools | None = None,
    approver: Approver | None = None,
    ask: bool = False,
) -> ToolOutcome:
    """Run one tool call the model made: (content, ok, refused) for the model; ``Waiting``
    while a person has not answered; None when a person cancelled. ``ask`` (a hook asked)
    sends a call the policy allows to a person too; it never lets a denied one through."""
    if call.parse_error is not None:
        return (
            f"the arguments are not a JSON object ({call.parse_error}); send valid JSON",
            False,
            True,
        )
    if extra is not None and extra.handles(call.name):
        return await _session_tool(request, box, call, extra, approver, ask)
    tool_call = ToolCall(id=call.id, name=call.name, arguments=call.arguments)
    decision = box.check(tool_call)
    approved = False
    if decision.verdict is Verdict.ASK or (ask and decision.verdict is Verdict.ALLOW):
        outcome = await _approval(request, box, call, decision, approver)
        if outcome is not True:
            return outcome
        approved = True
    _, result = await box.run(tool_call, approved=approved)
    return result.content, result.ok, result.refused

async def _session_tool(
    request: AttemptRequest,
    box: Toolbox,
    call: ModelToolCall,
    extra: SessionTools,
    approver: Approver | None,
    ask: bool = False,
) -> ToolOutcome:
    """A profile session's own tool (MCP, memory, note_learning): the effective profile
    decides, and an ``ask`` takes the same path as a built-in tool's."""
    verdict, label = extra.check(call.name)
    if verdict == "deny":
        return label, False, True
    approved = False
    if verdict == "ask" or (ask and verdict == "allow"):
        asked = _Asked(permission=label, message=f"{label} needs a person's approval")
        outcome = await _approval(request, box, call, asked, approver)
        if outcome is not True:
            return outcome
        approved = True
    out = await extra.run(call.id, call.name, call.arguments, approved=approved)
    return box.redact(out.content), out.ok, out.refused

async def _approval(
    request: AttemptRequest,
    box: Toolbox,
    call: ModelToolCall,
    decision: Any,
    approver: Approver | None,
) -> ToolOutcome | Literal[True]:
    """True when a person accepted the call in ``ask``; otherwise the outcome to return."""
    answer = await _answer(request, box, call, decision, approver)
    if isinstance(answer, (Waiting, tuple)):
        return answer
    if answer == "cancel":
        return None
    if answer != "accept":
        return f"refused {decision.permission}: a person declined this call", False, True
    return True


async def _answer(
    request: AttemptRequest,
    box: Toolbox,
    call: ModelToolCall,
    decision: Any,
    approver: Approver | None,
) -> Answer | Waiting | tuple[str, bool, bool]:
    """A person's answer to a call in ``ask``: from the run's approval queue when the
    engine offers one, else from the approver, else the call is treated as denied."""
    digest = action_digest(call)
    if request.session is not None:
        shown = json.loads(box.redact(json.dumps(dict(call.arguments))))
        approval_id, answer = await request.session.ask(
            digest,
            {
                "tool": call.name,
                "arguments": shown,
                "permission": decision.permission,
                "action_digest": digest,
                "prompt": f"{call.name} {json.dumps(shown, sort_keys=True)[:300]}",
            },
        )
        return Waiting(approval_id) if answer is None else answer
    if approver is None:
        refusal = (
            f"refused {decision.permission}: it needs a person's approval and this run "
            "has no approval channel for tool calls, so it is treated as denied"
        )
        return refusal, False, True
    return await approver(
        ApprovalAsk(
            run_id=request.run_id,
            node_id=request.node_id,
            attempt=request.attempt,
            tool=call.name,
            arguments=call.arguments,
            permission=decision.permission,
            message=decision.message or "",
            action_digest=digest,
        )
    )
