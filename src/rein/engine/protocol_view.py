"""One stored event in the protocol vocabulary: thread / turn / item.

The app-server, ACP and the web console all speak the Codex vocabulary (see the research
note on protocols, §1.2–1.4); this is the one place rein's events are translated into it,
so the engine's event names can change without a surface noticing:

- a **run** is a thread (``threadId`` is the run id; a subgraph's child run is a thread of
  its own);
- a **node** is a turn of that thread (``turnId`` is ``<run>/<node key>``);
- an **attempt** is an item of that turn (``itemId`` is ``<run>/<node key>#<attempt>``):
  ``attempt/started`` is ``item/started``, what the worker streams are the item's deltas,
  and ``attempt/finished`` (or ``attempt/interrupted``) is ``item/completed``, the
  authoritative end of the item;
- an answered approval resolves the server request that asked it (``serverRequest/resolved``);
- a lifecycle hook's run is ``hook/started`` / ``hook/completed`` with the Codex ``run``
  summary, and a compaction of the conversation a ``contextCompaction`` item.

Events with no protocol meaning (edge resolutions, worker state checkpoints) map to nothing.
The function is pure: the same event always gives the same notifications.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.store.base import Event


class Notification(Frozen):
    """One server → client notification: a method name and its params."""

    method: str
    params: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "params": dict(self.params)}


# How a node's end reads as a turn status, and an attempt's end as an item status.
_TURN_STATUS = {"succeeded": "completed", "skipped": "completed", "failed": "failed",
                "blocked": "failed", "cancelled": "interrupted"}
_THREAD_STATUS = {"running": "active", "waiting": "idle", "awaiting_human": "idle"}
# A worker's item kinds as deltas of the attempt item.
_DELTAS = {"message": "item/agentMessage/delta", "reasoning": "item/reasoning/summaryTextDelta",
           "tool_call": "item/mcpToolCall/progress", "tool_result": "item/mcpToolCall/progress"}


def turn_id(run_id: str, node: str) -> str:
    return f"{run_id}/{node}"


def item_id(run_id: str, node: str, attempt: Any) -> str:
    return f"{run_id}/{node}#{attempt}"


def notifications(event: Event) -> tuple[Notification, ...]:
    """What ``event`` tells a protocol client, in order (often one notification, or none)."""
    p = event.payload
    thread = str(event.run_id)
    node = str(p.get("node") or "")
    ids: dict[str, Any] = {"threadId": thread}
    if node:
        ids["turnId"] = turn_id(thread, node)

    def one(method: str, **params: Any) -> tuple[Notification, ...]:
        return (Notification(method=method, params={**ids, **params}),)

    match event.type:
        case "run/started":
            return one("thread/started", thread={
                "id": thread, "status": {"type": "active"},
                "parentThreadId": p.get("parent_run_id"), "createdAt": event.at})
        case "run/paused" | "run/resumed":
            status = str(p.get("status") or "running")
            return one("thread/status/changed",
                       status={"type": _THREAD_STATUS.get(status, "active")})
        case "run/finished" | "run/restarted":
            return one("thread/status/changed", status={"type": "idle"}) + \
                one("thread/closed")
        case "node/started":
            return one("turn/started", turn={"id": ids["turnId"], "status": "inProgress",
                                             "startedAt": event.at})
        case "node/finished" | "node/skipped" | "node/cancelled":
            status = _TURN_STATUS.get(str(p.get("status")), "failed")
            return one("turn/completed", turn={"id": ids["turnId"], "status": status,
                                               "completedAt": event.at})
        case "attempt/started":
            return one("item/started", item=_attempt_item(event, "inProgress"))
        case "attempt/finished" | "attempt/interrupted":
            done = p.get("result") == "succeeded"
            return one("item/completed",
                       item=_attempt_item(event, "completed" if done else "failed"))
        case "item":
            return _delta(event, ids)
        case "approval/answered":
            return one("serverRequest/resolved", requestId=str(p.get("approval_id")))
        case "diagnostic":
            method = "error" if p.get("severity") == "error" else "warning"
            return one(method, message=str(p.get("message") or ""), code=p.get("code"))
        case "worker/unavailable":
            return one("warning", message=str(p.get("message") or "no worker available"))
        case "hook/started" | "hook/completed":
            return one(event.type, run=hook_run(p.get("run")))
    return ()


def hook_run(data: Any) -> dict[str, Any]:
    """A hook run as the Codex ``HookRunSummary``: its event in camelCase, a command handler
    run synchronously, scoped to the turn (a node attempt is a session)."""
    run = dict(data) if isinstance(data, Mapping) else {}
    event = str(run.get("eventName") or "")
    entries = []
    if run.get("message"):
        kind = {"blocked": "stop", "failed": "error"}.get(str(run.get("status")), "feedback")
        entries.append({"kind": kind, "text": str(run["message"])})
    if run.get("systemMessage"):
        entries.append({"kind": "warning", "text": str(run["systemMessage"])})
    return {"id": run.get("id"), "eventName": event[:1].lower() + event[1:],
            "handlerType": "command", "executionMode": "sync", "scope": "turn",
            "source": run.get("source") or run.get("hook"), "hook": run.get("hook"),
            "status": run.get("status"), "statusMessage": run.get("message"),
            "durationMs": run.get("durationMs"), "entries": entries}


def _attempt_item(event: Event, status: str) -> dict[str, Any]:
    p = event.payload
    node = str(p.get("node") or "")
    return {"id": item_id(event.run_id, node, p.get("attempt")), "type": "rein/attempt",
            "node": node, "attempt": p.get("attempt"), "status": status}


def _delta(event: Event, ids: Mapping[str, Any]) -> tuple[Notification, ...]:
    p = event.payload
    data = p.get("data") if isinstance(p.get("data"), Mapping) else {}
    assert isinstance(data, Mapping)
    kind = str(p.get("kind"))
    item = item_id(event.run_id, str(p.get("node") or ""), p.get("attempt"))
    if kind == "usage":
        return (Notification(method="thread/tokenUsage/updated",
                             params={**ids, "tokenUsage": {"last": dict(data)}}),)
    if kind == "notice":
        return (Notification(method="warning", params={
            **ids, "message": str(data.get("text") or "")}),)
    if kind in ("context_compaction", "hook_prompt"):  # whole items, as Codex records them
        whole = ({"id": f"{item}/compaction-{data.get('index', 1)}", "type": "contextCompaction"}
                 if kind == "context_compaction" else
                 {"id": f"{item}/hook-prompt", "type": "hookPrompt",
                  "text": str(data.get("text") or "")})
        return (Notification(method="item/started", params={**ids, "item": whole}),
                Notification(method="item/completed", params={**ids, "item": whole}))
    method = _DELTAS.get(kind)
    if method is None:
        return ()
    body: dict[str, Any] = {**ids, "itemId": item}
    if method == "item/mcpToolCall/progress":
        body["message"] = str(data.get("name") or data.get("tool") or kind)
    else:
        body["delta"] = str(data.get("text") or "")
    return (Notification(method=method, params=body),)
