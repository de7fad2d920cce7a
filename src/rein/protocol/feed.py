"""One turn's run events, folded into the Codex wire vocabulary: the turn's feed.

A turn is one run. :class:`Feed` reads that run's stored events in order and says what a
protocol client sees: ``turn/started``, every item's ``item/started`` → deltas →
``item/completed`` (the completed item authoritative), ``thread/tokenUsage/updated``, the
server requests that ask a person (:class:`ServerRequest`), ``serverRequest/resolved`` when
they are answered, and ``turn/completed``. The fold is pure and depends only on the stored
events and the turn's input, so a second process that folds the same run sends the same
feed, and :meth:`Feed.turn` rebuilds the turn's items for ``thread/read`` and
``thread/resume``. Internal event names never leave this module.

What the engine records maps onto Codex items like this:

- the user's input is a ``userMessage``; the model's text an ``agentMessage`` (the node's
  ``reply`` output is the one with ``phase: final_answer``);
- a ``shell_exec`` call is a ``commandExecution``, a file write or edit a ``fileChange``
  (followed by ``turn/diff/updated``), any other tool an ``mcpToolCall`` of server ``rein``;
- a tool call in ``ask`` is ``item/commandExecution/requestApproval`` (or the fileChange or
  permissions request), whose request id is the approval's id; a gate or a ``human``
  criterion is ``item/tool/requestUserInput``;
- a graph turn's nodes are the steps of ``turn/plan/updated``;
- a turn that ended without its run finishing (``turn/ended``, in the turn's own log,
  :mod:`rein.engine.cases.sessions.ends`) sends ``error`` and ``turn/completed`` with that error.

A turn completes once: whichever end the fold meets first holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.frozen import Record, field
from rein.engine.cases.sessions import replies
from rein.protocol import items as calls
from rein.protocol.messages import Message, Notification, ServerRequest, ms
from rein.store.base import Event, ThreadTurnRow

_HIDDEN = frozenset({"submit_outputs"})  # the answer, shown as the final agent message
# What a person may answer a command's question, in the order a client shows the buttons
# (``acceptForSession``: the thread's standing instructions accept the same call again).
AVAILABLE = ("accept", "acceptForSession", "decline", "cancel")
_OPTIONS = [{"label": "accept", "description": "approve and go on"},
            {"label": "decline", "description": "refuse; the run handles it"},
            {"label": "cancel", "description": "stop the run"}]
# How a run's end reads as a turn status.
_TURN_STATUS = {"succeeded": "completed", "cancelled": "interrupted"}


class Feed(Record):
    """The fold of one turn's run events (feed :meth:`apply` each event in ``seq`` order)."""

    thread_id: str
    turn_id: str
    cwd: str
    input: Sequence[Mapping[str, Any]]
    graph: Mapping[str, Any] | None = None  # a graph turn: id, digest, nodes, plan text
    started_at: str | None = None
    status: str = "inProgress"
    error: str | None = None
    details: str | None = None  # how to go on from the error that ended the turn
    _explained: bool = False  # the turn's end recorded its error (any status shows it)
    completed_at: str | None = None
    items: list[dict[str, Any]] = field(default_factory=list)  # completed, in order
    pending: dict[str, ServerRequest] = field(default_factory=dict)  # by approval id
    _open: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool call id → item
    _last_call: str | None = None
    _total: dict[str, int] = field(default_factory=dict)
    _unknown: set[str] = field(default_factory=set)  # a count some model call did not give
    _diffs: list[str] = field(default_factory=list)
    _plan: dict[str, str] = field(default_factory=dict)  # node → step status
    _count: int = 0
    _opened: bool = False
    steered: list[str] = field(default_factory=list)  # texts added mid-turn (turn/steer)
    _hooks: dict[str, int] = field(default_factory=dict)  # hook run id → display order
    _session_hook: str = ""  # the last SessionStart hook run

    @classmethod
    def of(cls, turn: ThreadTurnRow, *, cwd: str) -> Feed:
        """The empty fold of ``turn`` (a graph turn's plan as its input recorded it).
        ``cwd``: where its commands run, the workspace, whatever directory the thread is
        in (the thread's names the graphs its mentions find)."""
        items = turn.input.get("items") or []
        plan = turn.input.get("plan") if turn.input.get("kind") == "graph" else None
        return cls(thread_id=turn.thread_id, turn_id=turn.turn_id, cwd=cwd,
                   input=list(items), graph=plan if isinstance(plan, Mapping) else None)

    # -- the fold ------------------------------------------------------------------------

    def apply(self, event: Event) -> list[Message]:
        """What ``event`` tells the client, in order (often nothing)."""
        p = event.payload
        match event.type:
            case "run/started" if not p.get("parent_run_id"):
                return self._started(event)
            case "node/started" | "node/waiting" | "node/finished" | "node/skipped" | \
                    "node/cancelled" if self._plan_of(p):
                return self._step(p)
            case "item":
                return self._item(event)
            case "input/steered":
                return self._steered(event)
            case "hook/started" | "hook/completed":
                return self._hook(event)
            case "approval/requested" if p.get("kind") == "graph" and self.graph:
                return [self.digest_question(str(p.get("approval_id")))]
            case "approval/requested":
                return self._ask(event)
            case "approval/answered":  # (a run's own graph approval was never pending)
                return self._resolved(str(p.get("approval_id")))
            case "diagnostic":
                return self._diagnostic(p)
            case "run/paused":
                return [self._status({"type": "active", "activeFlags": ["waitingOnApproval"]})]
            case "run/resumed":
                return [self._status({"type": "active", "activeFlags": []})]
            case "node/finished" if isinstance(p.get("outputs"), Mapping):
                return self._reply(event, p["outputs"])
            case "run/finished" if not event.payload.get("parent_run_id"):
                return self._finished(event)
            case "turn/ended":
                return self._ended(event)
        return []

    def _started(self, event: Event) -> list[Message]:
        if self._opened:
            self._opened = False  # a graph turn opened before its run (the plan, the ask)
            return []
        return self.opening(event.at)

    def opening(self, at: str) -> list[Message]:
        """The turn's start: ``turn/started``, the user's message, and for a graph turn the
        plan as an item and as pending steps (sent before the digest is approved)."""
        self.started_at = at
        out: list[Message] = [
            self._status({"type": "active", "activeFlags": []}),
            self._n("turn/started", turn={"id": self.turn_id, "items": [],
                                          "status": "inProgress"})]
        user = {"type": "userMessage", "id": f"{self.turn_id}:user",
                "content": [dict(i) for i in self.input]}
        out += self._whole(user, at)
        if self.graph is not None:
            self._opened = True
            plan = {"type": "plan", "id": f"{self.turn_id}:plan",
                    "text": str(self.graph.get("plan") or "")}
            out += self._whole(plan, at, delta="item/plan/delta")
            out += self.plan([str(n) for n in self.graph.get("nodes") or ()])
        return out

    def digest_question(self, approval_id: str) -> ServerRequest:
        """A graph turn's first question: may the graph run, as shown, by its digest (an
        entry of the approval queue, :mod:`rein.engine.cases.sessions.digest`)."""
        assert self.graph is not None
        graph_id, digest = self.graph.get("id"), str(self.graph.get("digest"))
        request = ServerRequest(
            id=approval_id, method="item/tool/requestUserInput", digest=digest,
            params={"threadId": self.thread_id, "turnId": self.turn_id,
                    "itemId": f"{self.turn_id}:plan", "isBlocking": True, "questions": [{
                        "id": "digest", "header": "Run this graph?",
                        "question": f"Run graph {graph_id} as planned (digest {digest})?",
                        "isOther": False, "isSecret": False, "options": _OPTIONS}]})
        self.pending[request.id] = request
        return request

    def not_run(self, at: str, decision: str) -> list[Message]:
        """A graph turn whose digest was declined or cancelled: nothing ran."""
        if self.status != "inProgress":
            return []
        out: list[Message] = []
        item = {"type": "agentMessage", "id": f"{self.turn_id}:reply", "phase": "final_answer",
                "text": replies.not_run(decision)}
        out += self._whole(item, at, delta="item/agentMessage/delta")
        self.status, self.completed_at = ("interrupted" if decision == "cancel"
                                          else "completed"), at
        for step in self._plan:
            self._plan[step] = "pending"
        out.append(self._n("turn/completed", turn=self.turn()))
        out.append(self._status({"type": "idle"}))
        return out

    def _item(self, event: Event) -> list[Message]:
        p = event.payload
        data = p.get("data") if isinstance(p.get("data"), Mapping) else {}
        assert isinstance(data, Mapping)
        kind = p.get("kind")
        if kind == "message" and data.get("text"):
            item = {"type": "agentMessage", "id": self._next_id("msg"),
                    "text": str(data["text"]), "phase": "commentary"}
            return self._whole(item, event.at, delta="item/agentMessage/delta")
        if kind == "reasoning" and data.get("text"):
            return self._reasoning(str(data["text"]), event.at)
        if kind == "hook_prompt" and data.get("text"):
            # What SessionStart hooks told the model; one fragment, credited to the last
            # such hook run (the chain's context is recorded joined).
            prompt = {"type": "hookPrompt", "id": self._next_id("hook-prompt"), "fragments": [
                {"hookRunId": self._session_hook, "text": str(data["text"])}]}
            return self._whole(prompt, event.at)
        if kind == "context_compaction":
            return self._whole({"type": "contextCompaction",
                                "id": self._next_id("compaction")}, event.at)
        if kind == "usage":
            return self._usage(data)
        if kind == "tool_call":
            return self._call(event, data)
        if kind == "tool_result":
            return self._result(event, data)
        if kind == "notice" and isinstance(data.get("arguments"), Mapping):
            self._rewritten(str(data.get("id")), data["arguments"])
        return []

    def _rewritten(self, call: str, args: Mapping[str, Any]) -> None:
        """A call its hooks rewrote is shown as rewritten from here on: its question and its
        completed item name what is checked and run, not what the model first asked."""
        item = self._open.get(call)
        if item is None or "_name" not in item:
            return
        kept = {k: v for k, v in item.items() if k.startswith("_")}
        self._open[call] = {**calls.call_item(item["id"], item["_name"], args, self.cwd),
                            **kept, "_digest": calls.call_digest(item["_name"], args)}

    def _as_asked(self, item: dict[str, Any], prompt: str, key: str) -> dict[str, Any]:
        """The call as its question shows it: the approval binds to the call as checked,
        which a hook may have rewritten after the model's call was announced."""
        name, args = calls.shown_call(prompt)
        digest = calls.call_digest(name, args)
        if "_name" not in item or digest == item.get("_digest") or f":{digest}@" not in key:
            return item
        call = next(k for k, v in self._open.items() if v is item)
        self._rewritten(call, args)
        return self._open[call]
    def _steered(self, event: Event) -> list[Message]:
        """Input added to the turn while it ran: a user message of its own, in order."""
        given = event.payload.get("input")
        self.steered.append(str(event.payload.get("text") or ""))
        user = {"type": "userMessage", "id": f"{self.turn_id}:user-{len(self.steered) + 1}",
                "content": [dict(i) for i in given if isinstance(i, Mapping)]
                if isinstance(given, list) else []}
        return self._whole(user, event.at)

    def _reasoning(self, text: str, at: str) -> list[Message]:
        """A reasoning summary: one summary part, its text as the part's delta."""
        item_id = self._next_id("reasoning")
        started = {"type": "reasoning", "id": item_id, "summary": [], "content": []}
        return [self._n("item/started", item=started, startedAtMs=ms(at)),
                self._n("item/reasoning/summaryPartAdded", itemId=item_id, summaryIndex=0),
                self._n("item/reasoning/summaryTextDelta", itemId=item_id, summaryIndex=0,
                        delta=text),
                *self._complete({**started, "summary": [text]}, at)]

    def _hook(self, event: Event) -> list[Message]:
        """A lifecycle hook's run (:mod:`rein.tools.hooks`) as Codex's ``HookRunSummary``:
        a command hook run synchronously, scoped to the turn."""
        run = event.payload.get("run")
        if not isinstance(run, Mapping):
            return []
        order = self._hooks.setdefault(str(run.get("id")), len(self._hooks) + 1)
        name = str(run.get("eventName") or "")
        if name == "SessionStart":
            self._session_hook = str(run.get("id"))
        status = str(run.get("status") or "running")
        entries = []
        if run.get("message"):
            kind = {"blocked": "stop", "failed": "error"}.get(status, "feedback")
            entries.append({"kind": kind, "text": str(run["message"])})
        if run.get("systemMessage"):
            entries.append({"kind": "warning", "text": str(run["systemMessage"])})
        source = str(run.get("source") or "rein.toml").removeprefix("profile ")
        path = str(Path(self.cwd, source))  # an absolute source stays as it is
        summary: dict[str, Any] = {
            "id": str(run.get("id")), "eventName": name[:1].lower() + name[1:],
            "handlerType": "command", "executionMode": "sync", "scope": "turn",
            "source": "unknown", "sourcePath": path, "displayOrder": order, "startedAt": ms(event.at) // 1000, "status": status,
            "statusMessage": str(run["message"]) if run.get("message") else None,
            "entries": entries}
        if event.type == "hook/completed":
            took = float(run.get("durationMs") or 0)
            summary.update(durationMs=round(took), completedAt=ms(event.at) // 1000)
        return [self._n(event.type, run=summary)]

    def _call(self, event: Event, data: Mapping[str, Any]) -> list[Message]:
        name = str(data.get("name") or "")
        call = str(data.get("id") or self._next_id("call"))
        self._last_call = call
        if name in _HIDDEN:
            return []
        args = data.get("arguments") if isinstance(data.get("arguments"), Mapping) else {}
        assert isinstance(args, Mapping)
        return self._announce(call, name, args, event.at)

    def _announce(self, call: str, name: str, args: Mapping[str, Any], at: str
                  ) -> list[Message]:
        """``item/started`` for a tool call, kept open until its result."""
        item = calls.call_item(f"{self.turn_id}:{call}", name, args, self.cwd)
        item["_started"] = at
        item["_name"] = name
        item["_digest"] = calls.call_digest(name, args)
        self._open[call] = item
        return [self._n("item/started", item=calls.public(item), startedAtMs=ms(at))]

    def _result(self, event: Event, data: Mapping[str, Any]) -> list[Message]:
        item = self._open.pop(str(data.get("id")), None)
        if item is None:  # a call first seen through its question (see _ask): in order
            asked = next((k for k in self._open if k.startswith("asked:")), None)
            item = self._open.pop(asked) if asked is not None else None
        if item is None:
            return []
        ok, _content = calls.finish_call(item, data, ms(event.at) - ms(item["_started"]))
        out: list[Message] = []
        if item["type"] == "commandExecution" and item["status"] != "declined":
            out.append(self._n("item/commandExecution/outputDelta", itemId=item["id"],
                               delta=item["aggregatedOutput"]))
        if item["type"] == "fileChange" and ok:
            self._diffs.extend(c["diff"] for c in item["changes"])
        out += self._complete(item, event.at)
        if item["type"] == "fileChange" and ok:
            out.append(self._n("turn/diff/updated", diff="".join(self._diffs)))
        return out

    def _ask(self, event: Event) -> list[Message]:
        p = event.payload
        approval = str(p.get("approval_id"))
        kind = p.get("kind")
        base = {"threadId": self.thread_id, "turnId": self.turn_id}
        out: list[Message] = []
        if kind == "tool_call":
            item = self._asked_call(str(p.get("key") or ""))
            if item is not None:
                item = self._as_asked(item, str(p.get("prompt") or ""), str(p.get("key") or ""))
            if item is None:
                # A call the worker did not announce (the rest of a batch after a resume):
                # announced here, from what the question shows.
                name, args = calls.shown_call(str(p.get("prompt") or ""))
                out = self._announce(f"asked:{approval}", name, args, event.at)
                item = self._open[f"asked:{approval}"]
            item["_asked"] = True
            item_id = item["id"]
            params: dict[str, Any] = {**base, "itemId": item_id, "startedAtMs": ms(event.at),
                                      "reason": str(p.get("prompt") or "")}
            kind_of = item["type"] if item else "mcpToolCall"
            if kind_of == "commandExecution":
                assert item is not None
                method = "item/commandExecution/requestApproval"
                params.update(command=item["command"], cwd=self.cwd, kind="command",
                              commandActions=item["commandActions"],
                              availableDecisions=list(AVAILABLE))
            elif kind_of == "fileChange":
                method = "item/fileChange/requestApproval"
            else:
                method = "item/permissions/requestApproval"
                params.update(cwd=self.cwd, permissions={"network": None, "fileSystem": None})
        else:  # a gate, a `human` criterion, a checkpoint: a question with answers
            method = "item/tool/requestUserInput"
            params = {**base, "itemId": f"{self.turn_id}:{approval}", "isBlocking": True,
                      "questions": [{
                "id": approval, "header": str(p.get("node") or "approval"),
                "question": str(p.get("prompt") or "Approve?"), "isOther": False,
                "isSecret": False, "options": _OPTIONS}]}
        request = ServerRequest(id=approval, method=method, params=params,
                                digest=str(p.get("digest") or ""))
        self.pending[approval] = request
        return [*out, request]

    def _asked_call(self, key: str) -> dict[str, Any] | None:
        """The open tool call an approval asks about: the one whose exact call digest the
        approval's key names (several calls may be open at once), else the latest."""
        for item in self._open.values():
            if item.get("_digest") and f":{item['_digest']}@" in key:
                return item
        last = self._open.get(self._last_call or "")
        return last if last is not None and not last.get("_asked") else None

    def _resolved(self, approval: str) -> list[Message]:
        if self.pending.pop(approval, None) is None:
            return []
        return [self._n("serverRequest/resolved", requestId=approval)]

    def _reply(self, event: Event, outputs: Mapping[str, Any]) -> list[Message]:
        text = outputs.get("reply")
        if not isinstance(text, str) or self._plan:
            return []
        item = {"type": "agentMessage", "id": f"{self.turn_id}:reply", "text": text,
                "phase": "final_answer"}
        return self._whole(item, event.at, delta="item/agentMessage/delta")

    def _diagnostic(self, p: Mapping[str, Any]) -> list[Message]:
        message = f"{p.get('code') or 'rein'}: {p.get('message') or ''}"
        if p.get("severity") == "error":
            self.error = message
            return [self._n("error", error={"message": message}, willRetry=False)]
        return [Notification(method="warning", params={"threadId": self.thread_id,
                                                       "message": message})]

    def _finished(self, event: Event) -> list[Message]:
        if self.status != "inProgress":  # the turn ended already (turn/ended)
            return []
        status = _TURN_STATUS.get(str(event.payload.get("status")), "failed")
        out = self._cut_short(status, event.at)
        if self.graph is not None:
            item = {"type": "agentMessage", "id": f"{self.turn_id}:reply",
                    "phase": "final_answer",
                    "text": replies.run_ended(event.run_id, event.payload.get("status"))}
            out += self._whole(item, event.at, delta="item/agentMessage/delta")
        if status == "failed" and self.error is None:
            self.error = f"the run ended {event.payload.get('status')}"
        return out + self._complete_turn(status, event.at)

    def _ended(self, event: Event) -> list[Message]:
        """The turn ended without its run finishing: refused before it could start, or
        never started (:mod:`rein.engine.cases.sessions.ends`). It opens first if nothing ran."""
        if self.status != "inProgress":
            return []
        p = event.payload
        error = p.get("error") if isinstance(p.get("error"), Mapping) else {}
        assert isinstance(error, Mapping)
        status = "interrupted" if p.get("status") == "interrupted" else "failed"
        out = self.opening(event.at) if self.started_at is None else []
        self.error = f"{error.get('code') or 'REIN000'}: {error.get('message') or ''}"
        self.details = str(error.get("hint") or "") or None
        self._explained = True
        out.append(self._n("error", error=self._error(), willRetry=False))
        out += self._cut_short(status, event.at)
        return out + self._complete_turn(status, event.at)

    def _cut_short(self, status: str, at: str) -> list[Message]:
        """The calls still open, ended by the turn's end, and its questions, resolved."""
        out: list[Message] = []
        for item in list(self._open.values()):
            item["status"] = "declined" if status == "interrupted" else "failed"
            out += self._complete(item, at)
        self._open.clear()
        for approval in list(self.pending):  # nobody answers these any more
            out += self._resolved(approval)
        return out

    def _complete_turn(self, status: str, at: str) -> list[Message]:
        self.status, self.completed_at = status, at
        return [self._n("turn/completed", turn=self.turn()),
                self._status({"type": "idle"})]

    def _error(self) -> dict[str, str]:
        error = {"message": str(self.error)}
        if self.details:
            error["additionalDetails"] = self.details
        return error

    # -- graph turns: node states as plan steps ------------------------------------------

    def _plan_of(self, p: Mapping[str, Any]) -> bool:
        return bool(self._plan) and str(p.get("node")) in self._plan

    def plan(self, nodes: Sequence[str]) -> list[Message]:
        """A graph turn's plan: its nodes as steps, all pending (announced once, at start)."""
        self._plan = {n: "pending" for n in nodes}
        return [self._plan_update()]

    def _step(self, p: Mapping[str, Any]) -> list[Message]:
        node, status = str(p.get("node")), str(p.get("status") or "")
        done = status in ("succeeded", "failed", "blocked", "skipped", "cancelled")
        new = "completed" if done else "inProgress"
        if self._plan.get(node) == new:
            return []
        self._plan[node] = new
        return [self._plan_update()]

    def _plan_update(self) -> Notification:
        return self._n("turn/plan/updated", plan=[{"step": n, "status": s}
                                                  for n, s in self._plan.items()])

    # -- shapes --------------------------------------------------------------------------

    def turn(self, *, items: bool = True) -> dict[str, Any]:
        """The turn as Codex's ``Turn``: with its completed items for thread/read."""
        out: dict[str, Any] = {"id": self.turn_id,
                               "items": [calls.public(i) for i in self.items] if items else [],
                               "status": self.status, "error": None}
        # A failed turn says why; an interrupted one when its end recorded why (ends.py).
        if self.error is not None and (self.status == "failed" or self._explained):
            out["error"] = self._error()
        if self.started_at is not None:
            out["startedAt"] = ms(self.started_at) // 1000
        if self.completed_at is not None and self.started_at is not None:
            out["completedAt"] = ms(self.completed_at) // 1000
            out["durationMs"] = ms(self.completed_at) - ms(self.started_at)
        return out

    def usage(self) -> dict[str, int | None] | None:
        """The turn's tokens so far, summed over its model calls, in Codex's
        ``TokenUsageBreakdown`` names (inputTokens, outputTokens, totalTokens, ...). None
        when no model call reported its tokens; a count some call did not report, or that
        rein does not record (cached input, reasoning output), is None, never 0."""
        if not self._total:
            return None
        keys = ("inputTokens", "cachedInputTokens", "outputTokens", "reasoningOutputTokens",
                "totalTokens")
        return {key: None if key in self._unknown else self._total[key] for key in keys}

    def _next_id(self, kind: str) -> str:
        self._count += 1
        return f"{self.turn_id}:{kind}-{self._count}"

    def _n(self, method: str, **params: Any) -> Notification:
        return Notification(method=method, params={"threadId": self.thread_id,
                                                   "turnId": self.turn_id, **params})

    def _status(self, status: Mapping[str, Any]) -> Notification:
        return Notification(method="thread/status/changed",
                            params={"threadId": self.thread_id, "status": dict(status)})

    def _whole(self, item: dict[str, Any], at: str, *, delta: str | None = None
               ) -> list[Message]:
        """An item that starts and completes at once (a message), with its one delta."""
        out: list[Message] = [self._n("item/started", item={**item, "text": ""}
                                      if delta else item, startedAtMs=ms(at))]
        if delta:
            out.append(self._n(delta, itemId=item["id"], delta=item["text"]))
        return out + self._complete(item, at)

    def _complete(self, item: dict[str, Any], at: str) -> list[Message]:
        self.items.append(item)
        return [self._n("item/completed", item=calls.public(item), completedAtMs=ms(at))]

    def _usage(self, data: Mapping[str, Any]) -> list[Message]:
        # The wire's breakdown has an integer in every field (Codex's schema): a count not
        # reported is 0 there, and marked unknown for usage(). A call that reported no
        # tokens at all says nothing: a notification of zeros would read as an empty
        # context (ACP's ``used``), and Codex sends none without a count.
        given = {"inputTokens": data.get("input_tokens"),
                 "outputTokens": data.get("output_tokens")}
        self._unknown |= {key for key, value in given.items() if value is None}
        self._unknown |= {"cachedInputTokens", "reasoningOutputTokens"}  # not recorded
        if self._unknown & set(given):
            self._unknown.add("totalTokens")
        if all(value is None for value in given.values()):
            return []
        last = {"inputTokens": int(given["inputTokens"] or 0), "cachedInputTokens": 0,
                "outputTokens": int(given["outputTokens"] or 0),
                "reasoningOutputTokens": 0}
        last["totalTokens"] = last["inputTokens"] + last["outputTokens"]
        for key, value in last.items():
            self._total[key] = self._total.get(key, 0) + value
        return [self._n("thread/tokenUsage/updated",
                        tokenUsage={"total": dict(self._total), "last": last})]


__all__ = ["Feed", "Message", "Notification", "ServerRequest", "ms"]
