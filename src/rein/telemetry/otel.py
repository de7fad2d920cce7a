"""Runs, nodes and attempts as OpenTelemetry spans, built from the stored event stream.

Optional: needs the ``otel`` extra (``opentelemetry-sdk``). The spans are made after the
fact from what the store holds, so any run can be exported, from any process, as often as
wanted; their times are the events' times. One trace per top-level run:

    run <graph id>                    run/started → run/finished (or the last event)
      node <node key>                 node/started → node/finished | skipped | cancelled
        attempt <node key> #<n>       attempt/started → attempt/finished
        run <child graph id>          a subgraph node's child run, below its node

Usage::

    from opentelemetry.sdk.trace import TracerProvider
    from rein.telemetry import export_run

    export_run(store, "run-...", tracer_provider=provider)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from rein.errors import ConfigError
from rein.store.base import Event, Store

_NODE_END = frozenset({"node/finished", "node/skipped", "node/cancelled"})
_FAILED = frozenset({"failed", "blocked", "cancelled", "partial", "timeout",
                     "criteria_failed", "budget_exceeded"})


def _ns(at: str) -> int:
    return int(dt.datetime.fromisoformat(at).timestamp() * 1_000_000_000)


def export_run(store: Store, run_id: str, *, tracer_provider: Any = None) -> int:
    """Emit the spans of run ``run_id`` (and its child runs); returns how many were made."""
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError("OpenTelemetry export needs the opentelemetry-sdk package",
                          code="OTEL_MISSING", hint="pip install 'rein[otel]'") from exc
    provider = tracer_provider or trace.get_tracer_provider()
    tracer = provider.get_tracer("rein")
    return _export(store, tracer, run_id, parent=None)


def _export(store: Store, tracer: Any, run_id: str, parent: Any) -> int:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    run = store.get_run(run_id)
    if run is None:
        raise KeyError(run_id)
    events = store.events(run.run_id)
    if not events:
        return 0
    ctx = None if parent is None else trace.set_span_in_context(parent)
    run_span = tracer.start_span(f"run {run.graph_id}", context=ctx,
                                 start_time=_ns(events[0].at), attributes={
                                     "rein.run_id": run.run_id, "rein.graph_id": run.graph_id,
                                     "rein.graph_digest": run.graph_digest,
                                     "rein.status": run.status.value})
    made = 1
    nodes: dict[str, Any] = {}
    attempts: dict[tuple[str, int], Any] = {}
    for event in events:
        made += _apply(tracer, run_span, nodes, attempts, event)
    children = {c.parent_node_key: c for c in store.child_runs(run.run_id)}
    for key, child in children.items():
        made += _export(store, tracer, child.run_id, nodes.get(str(key), run_span))
    last = _ns(events[-1].at)
    for span in [*attempts.values(), *nodes.values()]:
        if span.is_recording():
            span.end(end_time=last)  # still open when the stream ends (paused or crashed)
    if run.status.value in _FAILED:
        run_span.set_status(Status(StatusCode.ERROR, run.status.value))
    run_span.end(end_time=last)
    return made


def _apply(tracer: Any, run_span: Any, nodes: dict[str, Any],
           attempts: dict[tuple[str, int], Any], event: Event) -> int:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    p: Mapping[str, Any] = event.payload
    key = str(p.get("node", ""))
    at = _ns(event.at)
    if event.type == "node/started" and key not in nodes:
        nodes[key] = tracer.start_span(
            f"node {key}", context=trace.set_span_in_context(run_span), start_time=at,
            attributes={"rein.node": key, "rein.node_type": str(p.get("type", ""))})
        return 1
    if event.type in _NODE_END and key in nodes:
        span = nodes[key]
        status = str(p.get("status", ""))
        span.set_attribute("rein.status", status)
        if status in _FAILED:
            span.set_status(Status(StatusCode.ERROR, status))
        if span.is_recording():
            span.end(end_time=at)
        return 0
    if event.type == "attempt/started" and key:
        n = int(p.get("attempt", 0))
        parent = nodes.get(key, run_span)
        attempts[(key, n)] = tracer.start_span(
            f"attempt {key} #{n}", context=trace.set_span_in_context(parent), start_time=at,
            attributes={"rein.node": key, "rein.attempt": n,
                        "rein.worker": str(p.get("worker", ""))})
        return 1
    if event.type == "attempt/finished" and (key, int(p.get("attempt", 0))) in attempts:
        span = attempts[(key, int(p["attempt"]))]
        result = str(p.get("result", ""))
        span.set_attribute("rein.result", result)
        if p.get("failure"):
            span.set_attribute("rein.failure", str(p["failure"]))
        if result in _FAILED:
            span.set_status(Status(StatusCode.ERROR, result))
        if span.is_recording():
            span.end(end_time=at)
    return 0
