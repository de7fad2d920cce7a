"""A run's event stream as spans: plain data, no OpenTelemetry package needed.

One trace per top-level run; every span's ids are derived from the run id, the node key and
the attempt number (or the event that starts it), so any process that reads the same events
makes the same spans: a run paused in one process and continued in another continues one
trace, and ``rein runs trace`` prints the ids a live exporter sent. The shape, each span's
name first (names are stable; every id is an attribute, and ``label`` says it for people)::

    run                         run/started → run/finished | run/restarted
      node                      node/started → node/finished | skipped | cancelled
        map item / loop iteration   one per item or iteration of a map or loop node,
          node                      its body's nodes below it (rein.index)
        attempt                 attempt/started → attempt/finished | attempt/interrupted
          chat <model>          one model call (rein.telemetry.genai)
          execute_tool <tool>   one tool call: its tool_call item → its tool_result
        run                     a subgraph node's child run, below its node

Approvals are events of the span they hold up (``approval.requested``,
``approval.answered``, ``approval.refused``): the attempt that asked, else the node, else
the run. A conversation turn's run carries ``gen_ai.conversation.id`` and
``rein.turn_id``, and links to the run of the thread's previous turn.

A node started again after a pause (replay) continues its span; a node run again after it
ended (``resume_failed``) gets a new one (``rein.generation``). An attempt in flight when a
rein died ends at its ``attempt/interrupted`` event with an error status; its re-run under
the same number is a new span (``rein.rerun``). A span whose end is not in the stream yet
(the run is waiting, or its rein died) has ``end`` ``None``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from rein.core.frozen import Frozen, Record, field
from rein.store.base import Event, RunRow, Store
from rein.store.lineage import top_run_id
from rein.telemetry import genai

NODE_END = frozenset({"node/finished", "node/skipped", "node/cancelled"})
RUN_END = frozenset({"run/finished", "run/restarted"})
FAILED = frozenset({"failed", "blocked", "cancelled", "partial", "timeout",
                    "criteria_failed", "budget_exceeded", "interrupted"})
APPROVALS = {"approval/requested": "approval.requested",
             "approval/answered": "approval.answered",
             "approval/refused": "approval.refused"}
# A node of a map item's or a loop iteration's body: "<container>[<index>].<node id>".
_SCOPED = re.compile(r"^(?P<container>.+)\[(?P<index>\d+)\]\.(?P<node>[^.\[\]]+)$")


def trace_id(top_run_id: str) -> str:
    """The trace id of a top-level run (32 hex digits)."""
    return _digest("trace", top_run_id, size=32)


def span_id(*parts: Any) -> str:
    """The span id of ``parts`` (run id, kind, node key, ...) (16 hex digits)."""
    return _digest(*parts, size=16)


def _digest(*parts: Any, size: int) -> str:
    text = "\x1f".join(str(p) for p in parts)
    value = hashlib.sha256(text.encode("utf-8")).hexdigest()[:size]
    return value if value.strip("0") else "1".rjust(size, "0")  # all zeros is invalid


class SpanEvent(Frozen):
    """Something that happened during a span (an approval asked or answered)."""

    name: str
    at: str
    attributes: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "at": self.at, "attributes": dict(self.attributes)}


class SpanRecord(Frozen):
    """One span: what ``rein runs trace --json`` prints and the exporters send."""

    name: str  # stable: "run", "node", "attempt", "chat <model>", "execute_tool <tool>"...
    kind: str  # "run", "node", "item", "attempt", "model" or "tool"
    trace_id: str
    span_id: str
    parent_span_id: str | None
    start: str  # ISO 8601, the event's time
    end: str | None  # None: still open when the stream ends
    attributes: Mapping[str, Any]
    status: str  # "ok", "error" or "unset"
    status_message: str | None = None
    label: str = ""  # for people: the name with the span's ids ("attempt c #2")
    events: tuple[SpanEvent, ...] = ()
    links: tuple[tuple[str, str], ...] = ()  # (trace id, span id) of related spans

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label or self.name, "kind": self.kind,
                "trace_id": self.trace_id, "span_id": self.span_id,
                "parent_span_id": self.parent_span_id, "start": self.start, "end": self.end,
                "attributes": dict(self.attributes), "status": self.status,
                "status_message": self.status_message,
                "events": [e.to_json() for e in self.events],
                "links": [{"trace_id": t, "span_id": s} for t, s in self.links]}


class _Open(Record):
    """A span whose end is not seen yet."""

    name: str
    kind: str
    span_id: str
    parent: str | None
    start: str
    label: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    links: tuple[tuple[str, str], ...] = ()


class Conversation(Frozen):
    """What a conversation turn's run adds to its run span."""

    attributes: Mapping[str, Any]
    links: tuple[tuple[str, str], ...] = ()


class RunTrace(Record):
    """The spans of one run (not its children), fed its events one at a time, in order."""

    run_id: str
    graph_id: str
    trace_id: str
    parent_span_id: str | None = None  # a child run's subgraph node span
    conversation: Conversation | None = None
    run_span: _Open | None = None
    nodes: dict[str, _Open] = field(default_factory=dict)
    items: dict[tuple[str, int], _Open] = field(default_factory=dict)
    item_ends: dict[tuple[str, int], tuple[str, bool]] = field(default_factory=dict)
    attempts: dict[tuple[str, int], _Open] = field(default_factory=dict)
    tools: dict[tuple[str, int, str], _Open] = field(default_factory=dict)
    last_step: dict[tuple[str, int], str] = field(default_factory=dict)  # attempt → time
    asked: dict[str, _Open] = field(default_factory=dict)  # approval id → the span it holds
    generations: dict[str, int] = field(default_factory=dict)  # node key → spans ended
    reruns: dict[tuple[str, int, int], int] = field(default_factory=dict)
    run_generation: int = 0  # run spans ended: a failed run reopened gets a new one

    def feed(self, event: Event) -> list[SpanRecord]:
        """Apply one event; returns the spans it ended."""
        p: Mapping[str, Any] = event.payload
        key = str(p.get("node", ""))
        kind = event.type
        if self.run_span is None:
            self.run_span = self._open_run(event.at)
        if kind == "run/started" and p.get("digest"):
            self.run_span.attributes["rein.graph_digest"] = str(p["digest"])
        if kind in APPROVALS:
            self._approval(kind, p, event.at)
            return []
        if kind in RUN_END:
            return self._end_run(event, str(p.get("status") or (
                "cancelled" if kind == "run/restarted" else "")))
        if kind == "node/started" and key and key not in self.nodes:
            self._start_node(key, str(p.get("type", "")), event.at)
            return []
        if kind in NODE_END and key:
            return self._end_node(key, event, str(p.get("status", "")))
        if kind == "attempt/started" and key:
            out = self._start_attempt(key, int(p.get("attempt", 0)), event)
        elif kind in ("attempt/finished", "attempt/interrupted") and key:
            return self._end_attempt(key, int(p.get("attempt", 0)), event)
        elif kind == "item" and key:
            out = self._item(key, int(p.get("attempt", 0)), event)
        else:
            out = []
        if key and "attempt" in p:
            self.last_step[(key, int(p.get("attempt", 0)))] = event.at
        return out

    def node_span_id(self, key: str) -> str:
        """The span of node ``key`` now open, else its latest (a child run's parent)."""
        if key in self.nodes:
            return self.nodes[key].span_id
        gen = max(0, self.generations.get(key, 0) - 1)
        return span_id(self.run_id, "node", key, gen)

    def open_spans(self) -> list[SpanRecord]:
        """Spans started and not ended: the run waits, or its rein died."""
        spans = [*self.tools.values(), *self.attempts.values(), *self.items.values(),
                 *self.nodes.values()]
        if self.run_span is not None:
            spans.append(self.run_span)
        return [self._record(s, None, "unset", None) for s in spans]

    # -- runs and nodes ----------------------------------------------------------------

    def _open_run(self, at: str) -> _Open:
        attributes: dict[str, Any] = {"rein.run_id": self.run_id,
                                      "rein.graph_id": self.graph_id,
                                      "rein.generation": self.run_generation}
        links: tuple[tuple[str, str], ...] = ()
        if self.conversation is not None:
            attributes.update(self.conversation.attributes)
            links = self.conversation.links
        return _Open(name="run", label=f"run {self.graph_id}", kind="run",
                     span_id=span_id(self.run_id, "run", self.run_generation),
                     parent=self.parent_span_id, start=at, attributes=attributes,
                     links=links)

    def _end_run(self, event: Event, status: str) -> list[SpanRecord]:
        ended = [self._close(s, event.at, "cancelled", "run ended")
                 for s in [*self.tools.values(), *self.attempts.values()]]
        ended += [self._close(s, self.item_ends.get(k, (event.at, False))[0], "cancelled",
                              "run ended") for k, s in self.items.items()]
        ended += [self._close(s, event.at, "cancelled", "run ended")
                  for s in self.nodes.values()]
        self.tools.clear()
        self.attempts.clear()
        self.items.clear()
        self.nodes.clear()
        assert self.run_span is not None
        run_span, self.run_span = self.run_span, None
        self.run_generation += 1
        return [*ended, self._close(run_span, event.at, status)]

    def _start_node(self, key: str, node_type: str, at: str) -> None:
        gen = self.generations.get(key, 0)
        self.nodes[key] = _Open(
            name="node", label=f"node {key}", kind="node",
            span_id=span_id(self.run_id, "node", key, gen), parent=self._parent_of(key, at),
            start=at, attributes={**self._node_ids(key), "rein.node_type": node_type,
                                  "rein.generation": gen})

    def _node_ids(self, key: str) -> dict[str, Any]:
        scoped = _SCOPED.match(key)
        out: dict[str, Any] = {"rein.run_id": self.run_id, "rein.node": key,
                               "rein.node_id": scoped["node"] if scoped else key}
        if scoped:
            out["rein.index"] = int(scoped["index"])
        return out

    def _parent_of(self, key: str, at: str) -> str | None:
        """A node's parent span: its map item's or loop iteration's, else the run's."""
        scoped = _SCOPED.match(key)
        if scoped is None:
            return self.run_span.span_id if self.run_span else None
        where = (scoped["container"], int(scoped["index"]))
        item = self.items.get(where)
        if item is None:
            container, index = where
            gen = self.generations.get(container, 0)
            kind = self.nodes[container].attributes.get("rein.node_type") \
                if container in self.nodes else ""
            name = "loop iteration" if kind == "loop" else "map item"
            item = self.items[where] = _Open(
                name=name, label=f"{name} {container}[{index}]", kind="item",
                span_id=span_id(self.run_id, "item", container, gen, index),
                parent=self.node_span_id(container), start=at,
                attributes={"rein.run_id": self.run_id, "rein.node": container,
                            "rein.index": index})
        return item.span_id

    def _end_node(self, key: str, event: Event, status: str) -> list[SpanRecord]:
        ended = [self._close(self.tools.pop(k), event.at, "cancelled", "node ended")
                 for k in [k for k in self.tools if k[0] == key]]
        ended += [self._close(self.attempts.pop(k), event.at, "cancelled", "node ended")
                  for k in [k for k in self.attempts if k[0] == key]]
        span = self.nodes.pop(key, None)
        if span is None:  # skipped or cancelled before it started: a span of no length
            gen = self.generations.get(key, 0)
            span = _Open(name="node", label=f"node {key}", kind="node",
                         span_id=span_id(self.run_id, "node", key, gen),
                         parent=self._parent_of(key, event.at), start=event.at,
                         attributes={**self._node_ids(key), "rein.generation": gen})
        if event.payload.get("reason"):
            span.attributes["rein.reason"] = str(event.payload["reason"])
        self.generations[key] = self.generations.get(key, 0) + 1
        scoped = _SCOPED.match(key)
        if scoped is not None:  # the item ends with its last node; its node may go on
            where = (scoped["container"], int(scoped["index"]))
            failed = status in FAILED or self.item_ends.get(where, ("", False))[1]
            self.item_ends[where] = (event.at, failed)
        # A map's or loop's items end with it.
        for where in [w for w in self.items if w[0] == key]:
            at, failed = self.item_ends.pop(where, (event.at, False))
            ended.append(self._close(self.items.pop(where), at,
                                     "failed" if failed else "succeeded"))
        return [*ended, self._close(span, event.at, status)]

    # -- attempts, model calls, tool calls ---------------------------------------------

    def _start_attempt(self, key: str, n: int, event: Event) -> list[SpanRecord]:
        if (key, n) in self.attempts:
            return []  # the same attempt continued after a pause (a driver's answer)
        gen = self.generations.get(key, 0)
        again = self.reruns.get((key, gen, n), 0)
        parent = self.nodes[key].span_id if key in self.nodes else self.node_span_id(key)
        worker = str(event.payload.get("worker", ""))
        attributes: dict[str, Any] = {**self._node_ids(key), "rein.attempt": n,
                                      "rein.worker": worker}
        attributes.update(genai.agent(worker, str(attributes["rein.node_id"])))
        if self.conversation is not None and genai.CONVERSATION in \
                self.conversation.attributes:
            attributes[genai.CONVERSATION] = self.conversation.attributes[genai.CONVERSATION]
        if again:
            attributes["rein.rerun"] = True
        self.attempts[(key, n)] = _Open(
            name="attempt", label=f"attempt {key} #{n}", kind="attempt",
            span_id=span_id(self.run_id, "attempt", key, gen, n, again), parent=parent,
            start=event.at, attributes=attributes)
        return []

    def _end_attempt(self, key: str, n: int, event: Event) -> list[SpanRecord]:
        self.last_step.pop((key, n), None)
        ended = [self._close(self.tools.pop(k), event.at, "cancelled", "attempt ended")
                 for k in [k for k in self.tools if k[:2] == (key, n)]]
        span = self.attempts.pop((key, n), None)
        if span is None:
            return ended
        p = event.payload
        if event.type == "attempt/interrupted":
            span.attributes["rein.interrupted"] = True
            gen = self.generations.get(key, 0)
            self.reruns[(key, gen, n)] = self.reruns.get((key, gen, n), 0) + 1
            return [*ended, self._close(span, event.at, "interrupted",
                                        "the rein running it died")]
        result = str(p.get("result", ""))
        span.attributes["rein.result"] = result
        if p.get("failure"):
            span.attributes["rein.failure"] = str(p["failure"])
        return [*ended, self._close(span, event.at, result)]

    def _item(self, key: str, n: int, event: Event) -> list[SpanRecord]:
        """A worker's item: a model call ends (``usage``), a tool call starts or ends."""
        attempt = self.attempts.get((key, n))
        if attempt is None:
            return []
        kind, data = event.payload.get("kind"), event.payload.get("data") or {}
        ids = {"rein.run_id": self.run_id, "rein.node": key, "rein.attempt": n}
        if kind == "usage":
            name, attributes = genai.model_call(data)
            if self.conversation is not None and genai.CONVERSATION in \
                    self.conversation.attributes:
                attributes[genai.CONVERSATION] = \
                    self.conversation.attributes[genai.CONVERSATION]
            start = self.last_step.get((key, n), attempt.start)
            span = _Open(name=name, label=name, kind="model",
                         span_id=span_id(self.run_id, "model", event.seq),
                         parent=attempt.span_id, start=start,
                         attributes={**ids, **attributes})
            return [self._close(span, event.at, "succeeded")]
        call = str(data.get("id") or "")
        if kind == "tool_call" and call:
            name, attributes = genai.tool_call(data)
            self.tools[(key, n, call)] = _Open(
                name=name, label=name, kind="tool",
                span_id=span_id(self.run_id, "tool", event.seq), parent=attempt.span_id,
                start=event.at, attributes={**ids, **attributes})
        elif kind == "tool_result" and (key, n, call) in self.tools:
            span = self.tools.pop((key, n, call))
            attributes, failed = genai.tool_result(data)
            span.attributes.update(attributes)
            return [self._close(span, event.at, "failed" if failed else "succeeded",
                                "the tool call failed or was refused")]
        return []

    def _approval(self, kind: str, p: Mapping[str, Any], at: str) -> None:
        """An approval is an event of the span it holds up."""
        approval = str(p.get("approval_id") or "")
        target = self.asked.get(approval) if approval else None
        if target is None or not self._is_open(target):
            target = self._holder(str(p.get("node") or ""))
        if kind == "approval/requested" and approval:
            self.asked[approval] = target
        attributes = {f"rein.approval.{k}": str(p[k])
                      for k in ("kind", "status", "key", "digest") if p.get(k)}
        if approval:
            attributes["rein.approval_id"] = approval
        target.events.append(SpanEvent(name=APPROVALS[kind], at=at, attributes=attributes))

    def _holder(self, key: str) -> _Open:
        """The span an approval of node ``key`` holds up: its latest attempt, else the
        node, else the run."""
        attempts = [n for k, n in self.attempts if k == key]
        if attempts:
            return self.attempts[(key, max(attempts))]
        if key in self.nodes:
            return self.nodes[key]
        assert self.run_span is not None
        return self.run_span

    def _is_open(self, span: _Open) -> bool:
        return any(span is s for s in (*self.attempts.values(), *self.nodes.values(),
                                       self.run_span))

    def _close(self, span: _Open, at: str, status: str, message: str | None = None
               ) -> SpanRecord:
        span.attributes["rein.status"] = status
        error = status in FAILED
        return self._record(span, at, "error" if error else "ok",
                            (message or status) if error else None)

    def _record(self, span: _Open, end: str | None, status: str, message: str | None
                ) -> SpanRecord:
        return SpanRecord(name=span.name, kind=span.kind, trace_id=self.trace_id,
                          span_id=span.span_id, parent_span_id=span.parent, start=span.start,
                          end=end, attributes=dict(span.attributes), status=status,
                          status_message=message, label=span.label,
                          events=tuple(span.events), links=span.links)


def conversation(store: Store, run: RunRow) -> Conversation | None:
    """The thread and turn a conversation turn's run belongs to, and the link to the run of
    the thread's previous turn; None for any other run. A turn's graph is written under
    ``.rein/threads/<thread>/<turn>.agraph.yaml``."""
    path = PurePath(str(run.graph_path or ""))
    if path.parent.parent.name != "threads" or not str(run.graph_id).startswith(
            "rein/threads/"):
        return None
    thread, turn = path.parent.name, path.name.removesuffix(".agraph.yaml")
    attributes = {genai.CONVERSATION: thread, "rein.thread_id": thread, "rein.turn_id": turn}
    turns = store.thread_turns(thread)
    mine = next((t for t in turns if t.turn_id == turn), None)
    before = [t for t in turns if mine is not None and t.seq < mine.seq and t.run_id]
    if not before:
        return Conversation(attributes=attributes)
    previous = str(before[-1].run_id)
    attributes["rein.previous_turn_id"] = before[-1].turn_id
    return Conversation(attributes=attributes,
                        links=((trace_id(top_run_id(store, previous)),
                                span_id(previous, "run", 0)),))


def build_spans(store: Store, run_id: str) -> list[SpanRecord]:
    """Every span of run ``run_id`` and its child runs, from the store, by start time."""
    run = store.get_run(run_id)
    if run is None:
        raise KeyError(run_id)
    spans = _spans(store, run_id, trace_id(top_run_id(store, run_id)), parent=None)
    return sorted(spans, key=lambda s: (s.start, _RANK[s.kind]))


_RANK = {"run": 0, "node": 1, "item": 2, "attempt": 3, "model": 4, "tool": 4}


def _spans(store: Store, run_id: str, trace: str, parent: str | None) -> Iterable[SpanRecord]:
    run = store.get_run(run_id)
    assert run is not None
    builder = RunTrace(run_id=run.run_id, graph_id=run.graph_id, trace_id=trace,
                       parent_span_id=parent, conversation=conversation(store, run))
    for event in store.events(run.run_id):
        yield from builder.feed(event)
    yield from builder.open_spans()
    for child in store.child_runs(run.run_id):
        yield from _spans(store, child.run_id, trace,
                          builder.node_span_id(str(child.parent_node_key)))
