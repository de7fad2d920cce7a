"""A turn's feed, said in ACP's words: ``session/update`` payloads and permission options.

The protocol layer folds a turn's stored events into the Codex vocabulary
(:mod:`rein.protocol.feed`); this module says the same messages in ACP's words, purely, so
that a live prompt and a ``session/load`` replay give the same updates:

- an agent message's delta is an ``agent_message_chunk``, reasoning an
  ``agent_thought_chunk``, a graph turn's plan text a thought too;
- a tool call opens as a ``tool_call`` (kind ``execute`` for the shell, ``edit`` with a
  ``diff`` for a file write, ``read``/``search``/``fetch``/``other`` for the rest), status
  ``pending``: the model asked for it, and rein has not run it yet (it may be asked about,
  or wait for the calls before it); it closes as a ``tool_call_update`` (``completed`` or
  ``failed``: ACP has no "declined"). ``in_progress`` is said by the agent when a person
  allowed it (:mod:`rein.acp.agent`);
- a graph turn's node states are the entries of a ``plan``;
- token usage is a ``usage_update``: the tokens of the last model request (its input and
  output, what its context holds) out of the route's declared context window;
- the user's own message is replayed (``user_message_chunk``) only on ``session/load``:
  during a prompt the client already shows what it sent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import acp
from acp import schema

from rein.protocol.messages import Notification

Update = Any  # one of the SDK's session update models

_KINDS = {"file_read": "read", "read": "read", "file_search": "search", "search": "search",
          "glob": "search", "grep": "search", "http_fetch": "fetch", "fetch": "fetch"}
_STEP: dict[str, Any] = {"pending": "pending", "inProgress": "in_progress",
                         "completed": "completed"}
# A tool item's final status → ACP's (a declined or interrupted call did not complete).
_CLOSED = {"completed": "completed", "failed": "failed", "declined": "failed"}

# The options of a tool call's permission request, and the decision each one is.
TOOL_OPTIONS = (("allow_once", "Allow once", "accept"),
                ("allow_always", "Allow for this session", "acceptForSession"),
                ("reject_once", "Reject", "decline"),
                ("reject_always", "Reject for this session", "decline"))
# A question (a graph's digest, a gate): yes or no, never remembered.
QUESTION_OPTIONS = (("allow_once", "Approve", "accept"), ("reject_once", "Decline", "decline"))


def updates(message: Notification, *, cwd: str, replay: bool = False,
            window: int | None = None) -> list[Update]:
    """The ACP updates one feed notification makes (often none); ``window`` is the
    context window of the session's model in tokens, where rein.toml declares it."""
    p = message.params
    match message.method:
        case "item/agentMessage/delta" if p.get("delta"):
            return [acp.update_agent_message_text(str(p["delta"]))]
        case "item/plan/delta" if p.get("delta"):
            return [acp.update_agent_thought_text(str(p["delta"]))]
        case "item/started":
            return _started(p.get("item") or {}, cwd, replay)
        case "item/completed":
            return _completed(p.get("item") or {}, cwd)
        case "turn/plan/updated":
            return [acp.update_plan([
                acp.plan_entry(str(s.get("step")), status=_STEP.get(str(s.get("status")),
                                                                     "pending"))
                for s in p.get("plan") or ()])]
        case "thread/tokenUsage/updated":
            if window is None:  # ACP's `size` is the window: not said when not known
                return []
            usage = p.get("tokenUsage") or {}
            last = usage.get("last") or {}
            used = int(last.get("inputTokens") or 0) + int(last.get("outputTokens") or 0)
            return [schema.UsageUpdate(session_update="usage_update", used=used, size=window,
                                       field_meta={"rein": dict(usage.get("total") or {})})]
        case "error":
            text = str((p.get("error") or {}).get("message") or "")
            return [acp.update_agent_message_text(f"error: {text}\n")] if text else []
    return []


def _started(item: Mapping[str, Any], cwd: str, replay: bool) -> list[Update]:
    kind = item.get("type")
    if kind == "userMessage":
        if not replay:
            return []
        texts = [str(i.get("text") or i.get("path") or "") for i in item.get("content") or ()]
        return [acp.update_user_message_text(t) for t in texts if t]
    if kind in ("commandExecution", "fileChange", "mcpToolCall"):
        title, tool_kind, content, locations = describe(item, cwd)
        return [acp.start_tool_call(str(item["id"]), title, kind=tool_kind,  # type: ignore[arg-type]
                                    status="pending", content=content or None,
                                    locations=locations or None, raw_input=_raw(item))]
    return []


def _completed(item: Mapping[str, Any], cwd: str) -> list[Update]:
    kind = item.get("type")
    if kind == "reasoning":
        return [acp.update_agent_thought_text(str(t)) for t in item.get("summary") or ()]
    if kind not in ("commandExecution", "fileChange", "mcpToolCall"):
        return []
    status = _CLOSED.get(str(item.get("status")), "failed")
    content: list[Any] = []
    output: Any = None
    if kind == "commandExecution":
        output = {"output": item.get("aggregatedOutput"), "exitCode": item.get("exitCode"),
                  "status": item.get("status")}
        if item.get("aggregatedOutput"):
            content.append(acp.tool_content(acp.text_block(str(item["aggregatedOutput"]))))
    elif kind == "fileChange":
        content = describe(item, cwd)[2]
        output = {"status": item.get("status")}
    else:
        result = item.get("result") or {}
        error = item.get("error") or {}
        text = next((str(c.get("text")) for c in result.get("content") or ()), None) \
            if result else str(error.get("message") or "")
        if text:
            content.append(acp.tool_content(acp.text_block(text)))
        output = {"result": result or None, "error": error or None}
    return [acp.update_tool_call(str(item["id"]), status=status,  # type: ignore[arg-type]
                                 content=content or None, raw_output=output)]


def describe(item: Mapping[str, Any], cwd: str) -> tuple[str, str, list[Any], list[Any]]:
    """A tool item's title, ACP kind, content (a file change's diff) and locations."""
    kind = item.get("type")
    if kind == "commandExecution":
        return str(item.get("command") or "shell"), "execute", [], []
    if kind == "fileChange":
        content, locations = [], []
        for change in item.get("changes") or ():
            path = os.path.join(cwd, str(change.get("path") or ""))
            new = "".join(line[1:] + "\n" for line in str(change.get("diff") or "")
                          .splitlines() if line.startswith("+"))
            content.append(acp.tool_diff_content(path, new))
            locations.append(schema.ToolCallLocation(path=path))
        paths = ", ".join(str(c.get("path")) for c in item.get("changes") or ())
        return f"write {paths}", "edit", content, locations
    tool = str(item.get("tool") or "tool")
    args = item.get("arguments") or {}
    target = args.get("path") or args.get("url") or args.get("pattern") or ""
    return (f"{tool} {target}".strip(), _KINDS.get(tool, "other"), [],
            [schema.ToolCallLocation(path=os.path.join(cwd, str(args["path"])))]
            if args.get("path") else [])


def _raw(item: Mapping[str, Any]) -> dict[str, Any]:
    if item.get("type") == "commandExecution":
        return {"command": item.get("command"), "cwd": item.get("cwd")}
    if item.get("type") == "fileChange":
        return {"changes": [{"path": c.get("path"), "kind": c.get("kind")}
                            for c in item.get("changes") or ()]}
    return {"tool": item.get("tool"), "arguments": item.get("arguments")}


def options(choices: tuple[tuple[str, str, str], ...]) -> list[schema.PermissionOption]:
    return [schema.PermissionOption(option_id=kind, name=name, kind=kind)  # type: ignore[arg-type]
            for kind, name, _ in choices]
