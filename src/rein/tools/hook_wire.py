"""The Claude Code hook wire format: what a hook reads on stdin, and what its exit means.

A hook is a command. It reads one JSON object on stdin (``session_id``, ``cwd``,
``hook_event_name``, and per event ``tool_name``/``tool_input``/``tool_use_id``,
``tool_response``, ``source``, ``reason``, ``trigger``) and answers with its exit code:

- **0**: success. stdout may hold one JSON object: ``continue`` (false stops the session,
  ``stopReason`` says why), ``systemMessage`` (shown to the person), ``decision: "block"`` +
  ``reason``, and ``hookSpecificOutput`` (``permissionDecision`` ``allow|deny|ask|defer``,
  ``permissionDecisionReason``, ``updatedInput``, ``updatedToolOutput``,
  ``additionalContext``, and rein's explicit ``skipResult``). Plain text on stdout is context
  for ``SessionStart`` and ignored otherwise. ``defer`` (Claude Code's "hold this call for
  a decision outside the session") sends the call to rein's approval queue, as ``ask``
  does. The legacy ``decision: "approve"`` is refused (:data:`APPROVE_REFUSED`): in Claude
  Code it grants the call; in rein no hook can grant what the permission check refuses.
- **2**: block, with stderr as the reason (empty stderr: the hook failed, nothing is blocked).
- **anything else** (a crash, a timeout, a program that cannot start): the hook failed; the
  work goes on (fail-open, as in Claude Code and Codex).

:func:`interpret` turns one finished process into a :class:`HookAnswer`; it is pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from rein.config.hooks import HOOK_EVENTS, TOOL_EVENTS
from rein.core.frozen import Frozen

__all__ = ["APPROVE_REFUSED", "HOOK_EVENTS", "TOOL_EVENTS", "HookAnswer", "interpret",
           "matches"]

Status = Literal["completed", "failed", "blocked"]
Permission = Literal["allow", "deny", "ask", "defer"]
_PERMISSIONS = ("allow", "deny", "ask", "defer")
#: The code of a hook run that answered the legacy ``decision: "approve"``.
APPROVE_REFUSED = "HOOK001"


class HookAnswer(Frozen):
    """What one hook run said, read from its exit code, stdout and stderr."""

    status: Status
    message: str = ""  # why it blocked or failed (stderr, a reason, the exit code)
    permission: Permission | None = None  # PreToolUse: the hook's permissionDecision
    updated_input: Mapping[str, Any] | None = None  # PreToolUse: replaces the arguments
    updated_output: str | None = None  # PostToolUse: replaces the result the model reads
    skip_result: str | None = None  # PreToolUse: do not run the tool; the model reads this
    context: str = ""  # additionalContext (or SessionStart's plain stdout)
    system_message: str = ""  # shown to the person, never to the model
    stop_reason: str | None = None  # continue: false, and why: the session ends
    code: str | None = None  # a coded refusal of the answer (HOOK001)


def interpret(event: str, exit_code: int, stdout: str, stderr: str, *,
              timed_out: bool = False) -> HookAnswer:
    """The answer of one hook run, per the wire format above."""
    if timed_out:
        return HookAnswer(status="failed", message="timed out; its process group was killed")
    if exit_code == 2:
        reason = stderr.strip()
        if not reason:
            return HookAnswer(status="failed",
                              message="exited 2 (block) without a reason on stderr")
        return HookAnswer(status="blocked", message=reason)
    if exit_code != 0:
        tail = stderr.strip().splitlines()[-1:] or [""]
        detail = f": {tail[0][:300]}" if tail[0] else ""
        return HookAnswer(status="failed", message=f"exited {exit_code}{detail}")
    text = stdout.strip()
    if not text:
        return HookAnswer(status="completed")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, Mapping):
        # Claude Code adds a SessionStart hook's plain stdout to the context.
        return HookAnswer(status="completed", context=text if event == "SessionStart" else "")
    return _answer(event, data)


def _answer(event: str, data: Mapping[str, Any]) -> HookAnswer:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, Mapping) else {}
    system = _text(data.get("systemMessage"))
    context = _text(specific.get("additionalContext"))
    if data.get("continue") is False:
        reason = _text(data.get("stopReason")) or "a hook stopped the session"
        return HookAnswer(status="blocked", message=reason, stop_reason=reason,
                          system_message=system, context=context)
    if data.get("decision") == "approve":
        return HookAnswer(
            status="failed", code=APPROVE_REFUSED, system_message=system,
            message=f'{APPROVE_REFUSED}: the legacy decision "approve" is refused: a hook '
                    "cannot grant a call rein's permission check would refuse; answer "
                    'nothing to let the check decide, or hookSpecificOutput.permissionDecision '
                    '"deny" or "ask"')
    permission = specific.get("permissionDecision")
    if permission not in _PERMISSIONS:
        permission = None
    if data.get("decision") == "block" or permission == "deny":
        reason = (_text(specific.get("permissionDecisionReason")) or _text(data.get("reason"))
                  or "blocked by a hook")
        return HookAnswer(status="blocked", message=reason, permission="deny",
                          system_message=system, context=context)
    updated_input = specific.get("updatedInput") if event == "PreToolUse" else None
    output = specific.get("updatedToolOutput") if event == "PostToolUse" else None
    skip = specific.get("skipResult") if event == "PreToolUse" else None
    return HookAnswer(
        status="completed",
        message=_text(specific.get("permissionDecisionReason")),
        permission=permission,
        updated_input=dict(updated_input) if isinstance(updated_input, Mapping) else None,
        updated_output=None if output is None else _as_text(output),
        skip_result=None if skip is None else _as_text(skip),
        context=context,
        system_message=system,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _as_text(value: Any) -> str:
    """A replaced tool output as the model reads it: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def matches(matcher: str | None, tool: str | None) -> bool:
    """Whether a hook's ``matcher`` selects ``tool``, as in Claude Code: no matcher (or
    ``*``) selects every tool; names made of letters, digits, ``_`` and ``|`` are exact
    alternatives (``file_write|edit``); anything else is a regular expression that must
    match the whole name (``mcp__time__.*``). Events without a tool always match."""
    if tool is None or matcher is None or matcher in ("", "*"):
        return True
    if all(c.isalnum() or c in "_|" for c in matcher):
        return tool in matcher.split("|")
    import re

    return re.fullmatch(matcher, tool) is not None
