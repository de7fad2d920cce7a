"""A run's event stream as spans: plain data, no OpenTelemetry package needed.

One trace per top-level run; every span's ids are derived from the run id, the node key and
the attempt number, so any process that reads the same events makes the same spans: a run
paused in one process and continued in another continues one trace, and ``rein runs trace``
prints the ids a live exporter sent. The shape::

    run <graph id>                run/started → run/finished | run/restarted
      node <node key>             node/started → node/finished | skipped | cancelled
        attempt <node key> #<n>   attempt/started → attempt/finished | attempt/interrupted
        run <child graph id>      a subgraph node's child run, below its node

A node started again after a pause (replay) continues its span; a node run again after it
ended (``resume_failed``) gets a new one (``rein.generation``). An attempt in flight when a
rein died ends at its ``attempt/interrupted`` event with an error status; its re-run under
the same number is a new span (``rein.rerun``). A span whose end is not in the stream yet
(the run is waiting, or its rein died) has ``end`` ``None``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from rein.core.frozen import Frozen, Record, field
from rein.store.base import Event, Store
from rein.store.lineage import top_run_id

NODE_END = frozenset({"node/finished", "node/skipped", "node/cancelled"})
RUN_END = frozenset({"run/finished", "run/restarted"})
FAILED = frozenset({"failed", "blocked", "cancelled", "partial", "timeout",
                    "criteria_failed", "budget_exceeded", "interrupted"})


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


class SpanRecord(Frozen):
    """One span: what ``rein runs trace --json`` prints and the exporters send."""

    name: str
    kind: str  # "run", "node" or "attempt"
    trace_id: str
    span_id: str
    parent_span_id: str | None
    start: str  # ISO 8601, the event's time
    end: str | None  # None: still open when the stream ends
    attributes: Mapping[str, Any]
    status: str  # "ok", "error" or "unset"
    status_message: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "trace_id": self.trace_id,
                "span_id": self.span_id, "parent_span_id": self.parent_span_id,
                "start": self.start, "end": self.end, "attributes": dict(self.attributes),
                "status": self.status, "status_message": self.status_message}


class _Open(Record):
    """A span whose end is not seen yet."""

    name: str
    kind: str
    span_id: str
    parent: str | None
    start: str
    attributes: dict[str, Any] = field(default_factory=dict)


class RunTrace(Record):
    """The spans of one run (not its children), fed its events one at a time, in order."""

    run_id: str
    graph_id: str
    trace_id: str
    parent_span_id: str | None = None  # a child run's subgraph node span
    run_span: _Open | None = None
    nodes: dict[str, _Open] = field(default_factory=dict)
    attempts: dict[tuple[str, int], _Open] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)  # node key → spans ended
    reruns: dict[tuple[str, int, int], int] = field(default_factory=dict)
    run_generation: int = 0  # run spans ended: a failed run reopened gets a new one

    def feed(self, event: Event) -> list[SpanRecord]:
        """Apply one event; returns the spans it ended."""
        p: Mapping[str, Any] = event.payload
        key = str(p.get("node", ""))
        kind = event.type
        if self.run_span is None:
            self.run_span = _Open(
                name=f"run {self.graph_id}", kind="run",
                span_id=span_id(self.run_id, "run", self.run_generation),
                parent=self.parent_span_id, start=event.at,
                attributes={"rein.run_id": self.run_id, "rein.graph_id": self.graph_id,
                            "rein.generation": self.run_generation})
        if kind == "run/started" and p.get("digest"):
            self.run_span.attributes["rein.graph_digest"] = str(p["digest"])
        if kind in RUN_END:
            status = str(p.get("status") or ("cancelled" if kind == "run/restarted" else ""))
            ended = [self._close(s, event.at, "cancelled", "run ended")
                     for s in [*self.attempts.values(), *self.nodes.values()]]
            self.attempts.clear()
            self.nodes.clear()
            run_span, self.run_span = self.run_span, None
            self.run_generation += 1
            return [*ended, self._close(run_span, event.at, status)]
        if kind == "node/started" and key and key not in self.nodes:
            gen = self.generations.get(key, 0)
            self.nodes[key] = _Open(
                name=f"node {key}", kind="node", span_id=span_id(self.run_id, "node", key, gen),
                parent=self.run_span.span_id, start=event.at,
                attributes={"rein.run_id": self.run_id, "rein.node": key,
                            "rein.node_type": str(p.get("type", "")),
                            "rein.generation": gen})
            return []
        if kind in NODE_END and key:
            return self._end_node(key, event, str(p.get("status", "")))
        if kind == "attempt/started" and key:
            return self._start_attempt(key, int(p.get("attempt", 0)), event)
        if kind in ("attempt/finished", "attempt/interrupted") and key:
            n = int(p.get("attempt", 0))
            span = self.attempts.pop((key, n), None)
            if span is None:
                return []
            if kind == "attempt/interrupted":
                span.attributes["rein.interrupted"] = True
                gen = self.generations.get(key, 0)
                self.reruns[(key, gen, n)] = self.reruns.get((key, gen, n), 0) + 1
                return [self._close(span, event.at, "interrupted",
                                    "the rein running it died")]
            result = str(p.get("result", ""))
            span.attributes["rein.result"] = result
            if p.get("failure"):
                span.attributes["rein.failure"] = str(p["failure"])
            return [self._close(span, event.at, result)]
        return []

    def node_span_id(self, key: str) -> str:
        """The span of node ``key`` now open, else its latest (a child run's parent)."""
        if key in self.nodes:
            return self.nodes[key].span_id
        gen = max(0, self.generations.get(key, 0) - 1)
        return span_id(self.run_id, "node", key, gen)

    def open_spans(self) -> list[SpanRecord]:
        """Spans started and not ended: the run waits, or its rein died."""
        spans = [*self.attempts.values(), *self.nodes.values()]
        if self.run_span is not None:
            spans.append(self.run_span)
        return [self._record(s, None, "unset", None) for s in spans]

    def _start_attempt(self, key: str, n: int, event: Event) -> list[SpanRecord]:
        if (key, n) in self.attempts:
            return []  # the same attempt continued after a pause (a driver's answer)
        gen = self.generations.get(key, 0)
        again = self.reruns.get((key, gen, n), 0)
        parent = self.nodes[key].span_id if key in self.nodes else self.node_span_id(key)
        attributes: dict[str, Any] = {
            "rein.run_id": self.run_id, "rein.node": key, "rein.attempt": n,
            "rein.worker": str(event.payload.get("worker", ""))}
        if again:
            attributes["rein.rerun"] = True
        self.attempts[(key, n)] = _Open(
            name=f"attempt {key} #{n}", kind="attempt",
            span_id=span_id(self.run_id, "attempt", key, gen, n, again), parent=parent,
            start=event.at, attributes=attributes)
        return []

    def _end_node(self, key: str, event: Event, status: str) -> list[SpanRecord]:
        ended = [self._close(self.attempts.pop(k), event.at, "cancelled", "node ended")
                 for k in [k for k in self.attempts if k[0] == key]]
        span = self.nodes.pop(key, None)
        if span is None:  # skipped or cancelled before it started: a span of no length
            gen = self.generations.get(key, 0)
            span = _Open(name=f"node {key}", kind="node",
                         span_id=span_id(self.run_id, "node", key, gen),
                         parent=self.run_span.span_id if self.run_span else None,
                         start=event.at, attributes={"rein.run_id": self.run_id,
                                                     "rein.node": key, "rein.generation": gen})
        if event.payload.get("reason"):
            span.attributes["rein.reason"] = str(event.payload["reason"])
        self.generations[key] = self.generations.get(key, 0) + 1
        return [*ended, self._close(span, event.at, status)]

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
                          status_message=message)




def build_spans(store: Store, run_id: str) -> list[SpanRecord]:
    """Every span of run ``run_id`` and its child runs, from the store, by start time."""
    run = store.get_run(run_id)
    if run is None:
        raise KeyError(run_id)
    spans = _spans(store, run_id, trace_id(top_run_id(store, run_id)), parent=None)
    return sorted(spans, key=lambda s: (s.start, _RANK[s.kind]))


_RANK = {"run": 0, "node": 1, "attempt": 2}


def _spans(store: Store, run_id: str, trace: str, parent: str | None) -> Iterable[SpanRecord]:
    run = store.get_run(run_id)
    assert run is not None
    builder = RunTrace(run_id=run.run_id, graph_id=run.graph_id, trace_id=trace,
                       parent_span_id=parent)
    for event in store.events(run.run_id):
        yield from builder.feed(event)
    yield from builder.open_spans()
    for child in store.child_runs(run.run_id):
        yield from _spans(store, child.run_id, trace,
                          builder.node_span_id(str(child.parent_node_key)))
