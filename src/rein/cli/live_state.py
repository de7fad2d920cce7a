"""What a person watching a run sees, folded from the run's events alone.

``rein run``, ``rein resume`` and ``rein runs watch`` feed the same :class:`RunView` with the
events of the log (live from the Harness's listeners, or replayed and followed from the
store), so the view and the record cannot disagree: nothing here reads state from anywhere
else. Each :meth:`RunView.apply` returns the plain lines that describe the change, for a
terminal that cannot redraw; the redrawing view (:mod:`rein.cli.live`) renders the whole.
A subgraph's child run is folded into its parent: its nodes appear under the subgraph node's
key (``verdict.weigh``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Record, field

# A node in a loop iteration or a map item: `count_down[2].tick` → ("count_down", 2).
_INSTANCE = re.compile(r"^(?P<owner>.+?)\[(?P<index>\d+)\]\.")
_ENDED = frozenset({"succeeded", "failed", "skipped", "cancelled", "blocked", "stopped",
                    "not_run"})
# The events a view taken up mid-run is primed with: all that shape what a plain line says
# next (a node started again, an attempt continued, a notice said once). Items, the bulk of a
# log, are left out: the spend they carry is on the redrawn screen, never in a line.
HISTORY_TYPES = frozenset({
    "run/started", "run/paused", "run/resumed", "run/cancel_requested", "run/finished",
    "node/started", "node/waiting", "node/finished", "node/skipped", "node/cancelled",
    "attempt/started", "attempt/finished", "attempt/interrupted", "approval/requested",
    "approval/answered", "approval/refused", "driver/answered", "worker/unavailable",
    "diagnostic"})
MARKS = {"succeeded": "✓", "failed": "✗", "skipped": "-", "cancelled": "✗", "blocked": "✗",
         "running": "…", "waiting": "⏸", "awaiting_human": "⏸", "pending": "·",
         "stopped": "✗", "not_run": "·"}


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one event time to another (``None`` when either is unknown)."""
    if not start or not end:
        return None
    try:
        a = dt.datetime.fromisoformat(start)
        b = dt.datetime.fromisoformat(end)
    except ValueError:
        return None
    return max(0.0, (b - a).total_seconds())


def duration(seconds: float | None) -> str:
    """``0.3s``, ``12s``, ``4m05s``, ``2h03m``: short enough for a column."""
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class AttemptView(Record):
    number: int
    started_at: str
    worker: str = ""
    finished_at: str | None = None
    result: str | None = None  # succeeded, criteria_failed, failed, timeout, ...
    error: str | None = None

    @property
    def reason(self) -> str:
        """The error as recorded (it names the failure class first), else the result."""
        return self.error or str(self.result or "")

    @property
    def failed(self) -> bool:
        return self.result not in (None, "succeeded")


class NodeView(Record):
    key: str  # as shown: a child run's nodes carry the subgraph node's key first
    type: str = ""
    title: str = ""
    status: str = "pending"
    started_at: str | None = None
    finished_at: str | None = None
    reason: str | None = None  # why it ended that way, or what it waits for
    attempts: list[AttemptView] = field(default_factory=list)
    instances: set[int] = field(default_factory=set)  # loop iterations / map items begun
    instances_done: set[int] = field(default_factory=set)

    @property
    def owner(self) -> str | None:
        """The loop or map node this node runs inside, if any."""
        match = _INSTANCE.match(self.key)
        return match["owner"] if match else None

    @property
    def ended(self) -> bool:
        return self.status in _ENDED

    def seconds(self, now: str | None = None) -> float | None:
        return seconds_between(self.started_at, self.finished_at or now)

    def counts(self) -> str:
        """``3 iterations`` for a loop, ``4/5 items`` for a map (as far as begun)."""
        if self.type == "loop" and self.instances:
            n = len(self.instances)
            return f"{n} iteration{'s' if n != 1 else ''}"
        if self.type == "map" and self.instances:
            return f"{len(self.instances_done)}/{len(self.instances)} items"
        return ""


class RunView(Record):
    """The state of one run (and its child runs) as its events describe it."""

    run_id: str
    graph_id: str = ""
    status: str = "running"
    started_at: str | None = None
    finished_at: str | None = None
    last_at: str | None = None  # the time of the newest event: "now" for a replayed run
    nodes: dict[str, NodeView] = field(default_factory=dict)
    waits: dict[str, str] = field(default_factory=dict)  # what it waits for, by a key
    limits: Mapping[str, Any] = field(default_factory=dict)  # the graph's constraints
    cost_usd: float = 0.0
    tokens: int = 0
    cost_unknown: bool = False  # an attempt's worker could not measure it (a driver)
    tokens_unknown: bool = False
    node_executions: int = 0
    cancelled_by: str | None = None
    cancel_note: str | None = None
    notices: list[str] = field(default_factory=list)
    _prefix: dict[str, str] = field(default_factory=dict)  # child run id → its key prefix
    _seen: set[tuple[str, int]] = field(default_factory=set)

    def seed(self, key: str, type_: str, title: str = "") -> None:
        """A node the plan has that has not started yet (shown as pending)."""
        self.nodes.setdefault(key, NodeView(key=key, type=type_, title=title))

    def node(self, key: str) -> NodeView:
        view = self.nodes.get(key)
        if view is None:
            view = self.nodes[key] = NodeView(key=key)
        return view

    def _key(self, run_id: str, node: Any) -> str:
        return self._prefix.get(run_id, "") + str(node or "")

    def apply(self, event: Any) -> list[str]:
        """Fold one event in; the plain lines that tell the change (often none)."""
        mark = (str(event.run_id), int(event.seq))
        if mark in self._seen:  # the same event twice (a replay overlapping a tail)
            return []
        self._seen.add(mark)
        self.last_at = event.at
        p: Mapping[str, Any] = event.payload
        top = str(event.run_id) == self.run_id
        key = self._key(str(event.run_id), p.get("node"))
        match event.type:
            case "run/started":
                if top:
                    self.graph_id = str(p.get("graph_id") or "")
                    self.started_at = self.started_at or event.at
                    return []
                parent = str(p.get("parent_run_id") or "")
                self._prefix[str(event.run_id)] = \
                    self._prefix.get(parent, "") + f"{p.get('node') or ''}."
            case "run/paused" if top:
                self.status = str(p.get("status") or "waiting")
            case "run/resumed" if top:
                self.status = "running"
            case "run/cancel_requested" if top:
                self.cancelled_by = str(p.get("actor") or "") or None
                self.cancel_note = str(p.get("note") or "") or None
                who = f" by {self.cancelled_by}" if self.cancelled_by else ""
                why = f": {self.cancel_note}" if self.cancel_note else ""
                return [f"  ✗ cancel requested{who}{why}"]
            case "run/finished" if top:
                self.status = str(p.get("status") or "")
                self.finished_at = event.at
                self.waits.clear()
                self._settle(event.at)
            case "node/started":
                return self._started(key, event)
            case "attempt/started":
                return self._attempt_started(key, event)
            case "attempt/finished" | "attempt/interrupted":
                return self._attempt_finished(key, event)
            case "node/finished" | "node/skipped" | "node/cancelled":
                return self._ended(key, event)
            case "node/waiting":
                return self._waiting(key, p)
            case "approval/requested":
                approval = str(p.get("approval_id"))
                text = f"approval {approval} ({p.get('kind')}) {key or 'graph'}: " \
                    f"{p.get('prompt') or ''}"
                self.waits[f"approval:{approval}"] = text.rstrip(": ")
                return [f"  ? {self.waits[f'approval:{approval}']}"]
            case "approval/answered":
                self.waits.pop(f"approval:{p.get('approval_id')}", None)
            case "approval/refused":
                approval = str(p.get("approval_id"))
                self.waits[f"approval:{approval}"] = f"approval {approval} (its answer was " \
                    f"refused: {p.get('code')})"
                return [(f"  ✗ approval {approval}: its {p.get('status')} answer was "
                         f"refused ({p.get('code')}: {p.get('why')}); it waits for a person "
                         "again")]
            case "driver/answered":
                self.waits.pop(f"driver:{key}", None)
            case "worker/unavailable":
                self.waits[f"worker:{key}"] = f"a worker for {key} (tier {p.get('tier')})"
                return [f"  ⏸ no worker can serve {key} (tier {p.get('tier')})"]
            case "item" if p.get("kind") == "usage":
                self._spent(p.get("data"))
            case "diagnostic":
                line = f"{p.get('code')} {p.get('message')}"
                if line in self.notices:  # the same notice on every attempt: said once
                    return []
                self.notices.append(line)
                return [f"  ! {line}"]
            case "hook/completed":
                return hook_lines(p.get("run") or {})
        return []

    def _settle(self, at: str) -> None:
        """The run ended: a node it left in flight stopped with it (the store may still
        have it as it was), and a node that never began did not run."""
        for node in self.nodes.values():
            if node.status == "pending":
                node.status = "not_run"
            elif not node.ended:
                node.reason = f"was {node.status} when the run ended {self.status}"
                node.status = "cancelled" if self.status == "cancelled" else "stopped"
                node.finished_at = at

    def _started(self, key: str, event: Any) -> list[str]:
        p = event.payload
        node = self.node(key)
        node.type = str(p.get("type") or node.type)
        node.title = str(p.get("title") or node.title)
        if not node.ended:
            node.reason = None
        # A node started again after a pause or on resume is the same execution: said once.
        again = node.status in ("running", "waiting", "awaiting_human")
        node.status = "running"
        if not again:
            self.node_executions += 1
        node.started_at = node.started_at if again else event.at
        node.finished_at = None
        if (match := _INSTANCE.match(key)) is not None:
            self.node(match["owner"]).instances.add(int(match["index"]))
            return []  # a loop's or a map's body: its end is said, and counted on the owner
        return [] if again else [f"  … {key} started"]

    def _attempt_started(self, key: str, event: Any) -> list[str]:
        p = event.payload
        node = self.node(key)
        number = int(p.get("attempt") or len(node.attempts) + 1)
        if any(a.number == number and a.finished_at is None for a in node.attempts):
            return []  # the attempt goes on after a pause (a driver's answer): said once
        node.attempts = [a for a in node.attempts if a.number != number]
        node.attempts.append(AttemptView(number=number, started_at=event.at,
                                         worker=str(p.get("worker") or "")))
        if number > 1:  # the first attempt is the node's execution already counted
            self.node_executions += 1
        return [f"  … {key} attempt {number}"] if number > 1 else []

    def _attempt_finished(self, key: str, event: Any) -> list[str]:
        p = event.payload
        node = self.node(key)
        number = int(p.get("attempt") or 0)
        attempt = next((a for a in node.attempts if a.number == number), None)
        if attempt is None:
            attempt = AttemptView(number=number, started_at=event.at)
            node.attempts.append(attempt)
        attempt.finished_at = event.at
        attempt.result = "interrupted" if event.type == "attempt/interrupted" else \
            str(p.get("result") or "")
        attempt.error = str(p.get("error") or p.get("failure") or "") or None
        self._spent(p.get("usage"))
        if not attempt.failed:
            return []
        return [f"  ✗ {key} attempt {number}: {attempt.reason}"]

    def _ended(self, key: str, event: Any) -> list[str]:
        p = event.payload
        node = self.node(key)
        status = str(p.get("status") or event.type.split("/")[1])
        node.status = status
        node.finished_at = event.at
        node.reason = str(p.get("reason") or "") or None
        self.waits = {k: v for k, v in self.waits.items() if not k.endswith(f":{key}")}
        if (match := _INSTANCE.match(key)) is not None:
            owner = self.node(match["owner"])
            index = int(match["index"])
            if all(n.ended for n in self.nodes.values()
                   if n.key.startswith(f"{match['owner']}[{index}].")):
                owner.instances_done.add(index)
        took = duration(node.seconds())  # wall: from its first start to its end
        tried = len(node.attempts)
        extra = [f"{tried} attempts"] if tried > 1 else []
        extra += [x for x in (node.counts(), f"wall {took}" if took else "") if x]
        detail = f" ({node.reason})" if node.reason else ""
        return [f"  {MARKS.get(status, '·')} {key} {status}{detail}"
                + (f"  [{', '.join(extra)}]" if extra else "")]

    def _waiting(self, key: str, p: Mapping[str, Any]) -> list[str]:
        node = self.node(key)
        # The store keeps a node that waits for a worker as running; a person reads waiting.
        node.status = "awaiting_human" if p.get("status") == "awaiting_human" else "waiting"
        reason = "driver" if p.get("token") else str(p.get("reason") or "")
        node.reason = reason or None
        if reason == "driver":
            self.waits[f"driver:{key}"] = f"the driver's answer for {key}: `rein next` " \
                "prints the instruction, `rein submit` answers it"
        elif reason != "human":  # an approval says itself (approval/requested)
            self.waits[f"node:{key}"] = f"{key}: {reason or 'waiting'}"
        return [f"  ⏸ {key} waiting for {reason or 'an answer'}"]

    def _spent(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        cost = usage.get("cost_usd")
        if isinstance(cost, int | float):
            self.cost_usd += float(cost)
        else:  # recorded without a cost: nobody measured it, which is not free
            self.cost_unknown = True
        tokens = usage.get("total_tokens")
        if not isinstance(tokens, int):
            if not all(isinstance(usage.get(k), int) for k in ("input_tokens",
                                                                "output_tokens")):
                self.tokens_unknown = True
            tokens = sum(v for k in ("input_tokens", "output_tokens")
                         if isinstance(v := usage.get(k), int))
        self.tokens += tokens

    def budget(self) -> list[str]:
        """What was spent, against the graph's limits where it sets one; a part of it no
        worker measured makes the figure ``unknown`` (with what is known beside it)."""
        out = []
        cost_limit = self.limits.get("max_cost_usd")
        cost = f"${self.cost_usd:.2f}"
        if self.cost_unknown:
            cost = "cost unknown" + (f" (${self.cost_usd:.2f} measured)" if self.cost_usd
                                     else "")
        out.append(cost + (f" of ${float(cost_limit):.2f}" if cost_limit is not None else ""))
        token_limit = self.limits.get("max_total_tokens")
        tokens = f"{self.tokens} tokens"
        if self.tokens_unknown:
            tokens = "tokens unknown" + (f" ({self.tokens} measured)" if self.tokens else "")
        out.append(tokens + (f" of {token_limit}" if token_limit else ""))
        runs_limit = self.limits.get("max_node_executions")
        out.append(f"{self.node_executions}" + (f" of {runs_limit}" if runs_limit else "")
                   + (" node execution" if self.node_executions == 1 and not runs_limit
                      else " node executions"))
        return out

    def shown_nodes(self) -> list[NodeView]:
        """The nodes a screen lists: the body nodes of loops and maps only while they need a
        look (running, waiting, failed); finished ones are counted on their owner."""
        return [n for n in self.nodes.values()
                if n.owner is None or n.status not in ("succeeded", "skipped")]


__all__ = ["HISTORY_TYPES", "MARKS", "AttemptView", "NodeView", "RunView", "duration", "seconds_between"]


def hook_lines(run: Mapping[str, Any]) -> list[str]:
    """A hook that blocked or failed, or has a message for the person; quiet otherwise."""
    what = f"hook {run.get('hook')} ({run.get('eventName')}" + (
        f" {run['tool']})" if run.get("tool") else ")")
    lines = []
    if run.get("status") in ("blocked", "failed"):
        lines.append(f"  ! {what} {run.get('status')}: {run.get('message', '')}")
    if run.get("systemMessage"):
        lines.append(f"  i {what}: {run['systemMessage']}")
    return lines
