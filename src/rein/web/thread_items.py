"""A conversation's items as HTML: one renderer per Codex item type, and the open questions.

The items are the feed's (:mod:`rein.protocol.transcript`); this module only draws
them. Each item is a ``div.item`` carrying ``data-item`` (its id), ``data-type`` and
``data-status``, so a test or a script can find it; every value goes through ``e``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rein.protocol.messages import ServerRequest
from rein.web import states
from rein.web.html import e, form, hidden, pretty
from rein.web.pages_queue import input_fields

if TYPE_CHECKING:
    from rein.engine.service import ApprovalRow

OUTPUT_SHOWN = 20_000  # characters of a command's output or a diff drawn into the page


def _cut(text: Any) -> str:
    value = "" if text is None else str(text)
    if len(value) <= OUTPUT_SHOWN:
        return value
    return value[:OUTPUT_SHOWN] + f"\n… ({len(value) - OUTPUT_SHOWN} more characters)"


def _frame(item: Mapping[str, Any], head: str, inner: str) -> str:
    status = item.get("status") or ""
    badge = f" {states.badge(status)}" if status else ""
    return (f"<div class='item {e(item.get('type'))}' data-item='{e(item.get('id'))}' "
            f"data-type='{e(item.get('type'))}' data-status='{e(status)}'>"
            f"<div class='who'>{head}{badge}</div>{inner}</div>")


def _user(item: Mapping[str, Any]) -> str:
    parts = []
    for c in item.get("content") or ():
        if isinstance(c, Mapping) and c.get("type") == "text":
            parts.append(f"<p>{e(c.get('text'))}</p>")
        elif isinstance(c, Mapping):
            parts.append(f"<p class='muted'>{e(c.get('type'))} {e(c.get('path') or '')}</p>")
    return _frame(item, "You", "".join(parts))


def _agent(item: Mapping[str, Any]) -> str:
    final = item.get("phase") == "final_answer"
    return _frame(item, "Agent" + ("" if final else " <span class='muted'>(commentary)</span>"),
                  f"<p class='text'>{e(item.get('text'))}</p>")


def _reasoning(item: Mapping[str, Any]) -> str:
    summary = "".join(f"<p>{e(s)}</p>" for s in item.get("summary") or ())
    return _frame(item, "Reasoning", f"<div class='muted'>{summary}</div>")


def _command(item: Mapping[str, Any]) -> str:
    facts = [f"in <code>{e(item.get('cwd'))}</code>"]
    if item.get("exitCode") is not None:
        facts.append(f"exit {e(item.get('exitCode'))}")
    if item.get("durationMs") is not None:
        facts.append(f"{e(item.get('durationMs'))} ms")
    out = item.get("aggregatedOutput")
    shown = f"<pre tabindex='0' class='output'>{e(_cut(out))}</pre>" if out else ""
    return _frame(item, f"Command <code>$ {e(item.get('command'))}</code>",
                  f"<div class='muted'>{' · '.join(facts)}</div>{shown}")


def _diff(text: Any) -> str:
    lines = []
    for line in _cut(text).splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        lines.append(f"<span class='{cls}'>{e(line)}</span>" if cls else e(line))
    return "<pre tabindex='0' class='diff'>" + "\n".join(lines) + "</pre>"


def _files(item: Mapping[str, Any]) -> str:
    parts = []
    for c in item.get("changes") or ():
        if not isinstance(c, Mapping):
            continue
        kind = (c.get("kind") or {}).get("type") if isinstance(c.get("kind"), Mapping) else ""
        parts.append(f"<div><code>{e(c.get('path'))}</code> <span class='muted'>{e(kind)}"
                     f"</span></div>{_diff(c.get('diff'))}")
    return _frame(item, "File change", "".join(parts))


def _tool(item: Mapping[str, Any]) -> str:
    result = item.get("result") if isinstance(item.get("result"), Mapping) else {}
    assert isinstance(result, Mapping)
    texts = [str(c.get("text")) for c in result.get("content") or ()
             if isinstance(c, Mapping) and c.get("text") is not None]
    error = item.get("error") if isinstance(item.get("error"), Mapping) else None
    said = (f"<pre tabindex='0' class='output'>{e(_cut(chr(10).join(texts)))}</pre>" if texts else "") + (
        f"<div class='error'>{e(error.get('message'))}</div>" if error else "")
    return _frame(item, f"Tool <code>{e(item.get('server'))}.{e(item.get('tool'))}</code>",
                  f"<details><summary>arguments</summary>{pretty(item.get('arguments'))}"
                  f"</details>{said}")


def _plan(item: Mapping[str, Any]) -> str:
    return _frame(item, "Plan", f"<pre tabindex='0' class='plan'>{e(_cut(item.get('text')))}</pre>")


def _hook(item: Mapping[str, Any]) -> str:
    run = item.get("run") if isinstance(item.get("run"), Mapping) else {}
    assert isinstance(run, Mapping)
    entries = "".join(f"<li>{e(x.get('kind'))}: {e(x.get('text'))}</li>"
                      for x in run.get("entries") or () if isinstance(x, Mapping))
    took = f" · {e(run.get('durationMs'))} ms" if run.get("durationMs") is not None else ""
    body = (f"<div class='muted'><code>{e(run.get('sourcePath'))}</code>"
            f"{took}</div>" + (f"<ul>{entries}</ul>" if entries else ""))
    return _frame({**item, "status": run.get("status")},
                  f"Hook <code>{e(run.get('eventName'))}</code>", body)


def _other(item: Mapping[str, Any]) -> str:
    names = {"contextCompaction": "Context compacted", "hookPrompt": "Hook prompt"}
    text = item.get("text") or "".join(str(f.get("text") or "") for f in item.get("fragments")
                                       or () if isinstance(f, Mapping))
    inner = f"<p>{e(text)}</p>" if text else ""
    return _frame(item, e(names.get(str(item.get("type")), item.get("type"))), inner)


RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "userMessage": _user, "agentMessage": _agent, "reasoning": _reasoning,
    "commandExecution": _command, "fileChange": _files, "mcpToolCall": _tool,
    "plan": _plan, "hookRun": _hook}


def item(value: Mapping[str, Any]) -> str:
    return RENDERERS.get(str(value.get("type")), _other)(value)


_ASKS = {"item/commandExecution/requestApproval": "Run this command?",
         "item/fileChange/requestApproval": "Make this file change?",
         "item/permissions/requestApproval": "Allow this tool call?",
         "item/tool/requestUserInput": "A question for you"}


# The questions whose answers include ``acceptForSession`` (app-server protocol): a tool
# call's exact action, accepted again in this thread without asking.
FOR_SESSION = frozenset({"item/commandExecution/requestApproval",
                         "item/fileChange/requestApproval"})


def for_session(request: ServerRequest, entry: ApprovalRow | None) -> bool:
    """Whether ``request`` may be accepted for the session: the protocol offers it for this
    kind of question and the entry names the exact action (its digest) to remember."""
    return request.method in FOR_SESSION and entry is not None and \
        bool(entry.request.get("action_digest"))


def question(thread_id: str, request: ServerRequest, *, csrf: str, read_only: bool,
             entry: ApprovalRow | None = None) -> str:
    """A question of the turn, answerable here: the answer is bound to ``request.digest``,
    the digest of what this card shows, and refused if the entry no longer has it. A gate
    that takes values (``entry``: its queue entry) has a field for each it declares."""
    p = request.params
    shown = ""
    if p.get("command"):
        shown += f"<pre tabindex='0' class='output'>$ {e(p.get('command'))}</pre>"
    if p.get("reason"):
        shown += f"<p>{e(p.get('reason'))}</p>"
    for q in p.get("questions") or ():
        if isinstance(q, Mapping):
            shown += f"<p><b>{e(q.get('header'))}</b>: {e(q.get('question'))}</p>"
    head = (f"<div class='card ask' data-question='{e(request.id)}'>"
            f"<div><b>{e(_ASKS.get(request.method, request.method))}</b> "
            f"{states.badge('pending')}</div>{shown}"
            f"<div class='muted'>digest of what is shown: <code data-digest>"
            f"{e(request.digest)}</code></div>")
    if read_only:
        return head + "</div>"
    session = ("<button class='accept' name='action' value='acceptForSession' title='the "
               "same exact action is accepted again in this thread without asking'>Accept "
               "for this session</button> ") if for_session(request, entry) else ""
    buttons = ("<button class='accept' name='action' value='accept'>Accept</button> "
               + session +
               "<button class='decline' name='action' value='decline'>Decline</button> "
               "<button class='cancel' name='action' value='cancel' title='stops the turn'>"
               "Cancel the turn</button>")
    fields = input_fields(entry.request) if entry is not None else ""
    inner = (hidden("digest", request.digest) + fields
             + "<input type='text' name='note' placeholder='note (optional)'> " + buttons)
    return head + form(f"/threads/{thread_id}/approvals/{request.id}", csrf, inner,
                       cls="answer") + "</div>"


__all__ = ["FOR_SESSION", "for_session", "item", "question"]
