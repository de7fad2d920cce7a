"""The AGS run record (``agentic-graph-run-1.0.schema.json``), built from the store.

Nodes come from the node rows (already redacted when written), edges taken and diagnostics
from the event stream, usage is summed over every attempt. A child run's record is its own
document with ``parent_run_id``; its node in the parent carries ``child_run_id``. Secret
values never reach the store, so they cannot reach the record.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rein.core.ids import RunId
from rein.core.states import ApprovalKind, RunStatus
from rein.store.base import Store
from rein.store.rows import MEASURED, NodeFacts

if TYPE_CHECKING:
    from rein.engine.run.record_order import RecordOrder
    from rein.store.rows import AttemptFacts

FEATURES = (
    "task", "decision", "gate", "loop", "map", "subgraph", "subgraph.ref",
    "criteria.all", "compensation", "run_record", "checkpointing", "approval_by_digest",
)


SUPERSEDED = "x-rein-superseded"  # on an edge: its earlier resolutions, oldest first


def usage_of(store: Store, run_id: str, *, include_children: bool = False,
             settled_only: bool = False) -> dict[str, Any]:
    """Usage totals of a run: attempts summed; every attempt, gate and container counted as
    a node execution.

    Unknown stays unknown: an attempt whose worker could not measure its tokens or cost
    (a driver that reported no usage) records none, and a total that includes such an
    attempt is ``None``, never a sum that passes for the whole. An attempt that recorded no
    usage at all (closed before a worker ran, or still in flight) spent nothing yet. A
    driver's attempt whose turn rein attributed from the agent's own records
    (``usage/attributed``, :func:`attributed_usage`) counts what they say, not what the
    agent reported of itself.

    ``settled_only`` counts only the executions a continuation of the run adopts, which is
    what its budget starts from: an attempt still open (in flight when a rein died, or
    waiting for a driver) runs again under its own number and is counted when it does, and
    so is a gate or container that has not ended (replay starts it again). Tokens and cost
    are always counted: they were spent.
    """
    return _summed(store, run_id, include_children, settled_only)[0]


def usage_with_sources(store: Store, run_id: str) -> dict[str, Any]:
    """:func:`usage_of` a run with its child runs, and its ``sources``
    (:func:`usage_sources`), from one read of the store."""
    totals, found = _summed(store, run_id, True, False)
    return {**totals, "sources": found}


def _summed(store: Store, run_id: str, include_children: bool,
            settled_only: bool) -> tuple[dict[str, Any], list[str]]:
    """(:func:`usage_of`, :func:`usage_sources`) in one pass over the attempts' facts."""
    totals: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                              "cost_usd": 0.0, "tool_calls": 0, "node_executions": 0}
    unknown: set[str] = set()
    found: set[str] = set()
    runs = [run_id]
    if include_children:
        stack = [run_id]
        while stack:
            for child in store.child_runs(RunId(stack.pop())):
                runs.append(child.run_id)
                stack.append(child.run_id)
    for rid in runs:
        attributed = attributed_usage(store, rid)
        # Grouped by the store, each with its count and its figures summed: a handful of
        # values for a run of any size (``NodeFacts``, ``AttemptFacts``).
        for f in store.usage_facts(RunId(rid)):
            open_again = settled_only and not f.status.terminal
            if isinstance(f, NodeFacts):
                totals["node_executions"] += _executions(f, open_again)
                if f.usage is not None:  # a worker rein ran measured it
                    found.add("measured")
                    unknown.update(k for k in MEASURED if f.usage[k] is None)
                    for k, v in f.usage.items():
                        if v is not None:
                            totals[k] += v
                continue
            if f.attempt is None:  # nodes without attempts
                if f.type not in ("task", "decision") and f.started and not open_again:
                    totals["node_executions"] += f.count
                continue
            if f.type in ("task", "decision"):
                # Replay keeps the closed failures of an unfinished node; anything else
                # (in flight, or succeeded just before a crash) is run again.
                if not (open_again and f.attempt_status in (None, "succeeded")):
                    totals["node_executions"] += f.count
            elif f.attempt == 0 and f.started and not open_again:
                totals["node_executions"] += f.count
            found.update(_source(f, attributed))
            told = attributed.get(str(f.driver_token))
            # What rein attributed is one turn's: as many times as attempts carry it.
            used, times = (told, f.count) if told else (f.usage, 1)
            if not isinstance(used, Mapping):
                continue
            unknown.update(k for k in MEASURED if not _number(used.get(k)))
            for k, v in used.items():
                if k in totals and _number(v):
                    totals[k] += v * times
    totals["cost_usd"] = round(totals["cost_usd"], 6)
    for k in unknown:
        totals[k] = None
    return totals, sorted(found)


def _executions(f: NodeFacts, open_again: bool) -> int:
    """The node executions of nodes summed up (:func:`usage_of`), as the loop over their
    attempts in :func:`_summed` counts them one by one."""
    if f.type in ("task", "decision"):
        # each attempt; for a continuation, less those it takes again
        return (f.attempts - f.rerun) if open_again else f.attempts
    # a gate or container that started: once, whatever its attempts
    return f.count if f.started and not open_again else 0


def _source(f: AttemptFacts, attributed: Mapping[str, Any]) -> tuple[str, ...]:
    """Where the usage of attempts with these facts comes from (:func:`usage_sources`)."""
    if f.driver_token is None:
        return ("measured",) if f.usage is not None else ()
    if f.driver_token in attributed:
        return ("attributed",)
    if f.usage_source == "self-reported":
        return ("self-reported",)
    return ("unknown",) if f.attempt_status is not None else ()  # ended, no usage told


DRIVER_TOKEN = "x-rein-driver-token"  # on a driver's attempt: the turn that served it
ATTRIBUTED = "usage/attributed"


def attributed_usage(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    """The newest usage rein attributed to each driver turn of ``run_id`` from the agent's
    own records, by token (``rein runs report`` and ``rein dev report`` record it)."""
    out: dict[str, dict[str, Any]] = {}
    for event in store.events(RunId(run_id), types=[ATTRIBUTED]):
        usage = event.payload.get("usage")
        if isinstance(usage, Mapping) and isinstance(event.payload.get("token"), str):
            out[event.payload["token"]] = {**usage, "x-rein-source": "attributed"}
    return out


def usage_sources(store: Store, run_id: str) -> list[str]:
    """Where the usage of a run (with its child runs) comes from, each attempt's label once:
    ``measured`` (a worker rein ran counted it), ``attributed`` (a driver's turn, from the
    agent's own records), ``self-reported`` (a driver's turn, as the agent said) and
    ``unknown`` (a driver's turn nobody measured)."""
    return _summed(store, run_id, True, False)[1]


SOURCE = "x-rein-usage-source"  # on a driver's attempt whose usage the agent reported


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def build_record(store: Store, run_id: str) -> dict[str, Any]:
    """The run record of one run (top-level or child)."""
    from rein.core.version import VERSION

    run = store.get_run(run_id)
    if run is None:
        raise KeyError(run_id)
    record: dict[str, Any] = {
        "ags_version": "1.0",
        "kind": "AgenticGraphRun",
        "run_id": run.run_id,
        "graph_id": run.graph_id,
        "graph_digest": run.graph_digest,
        "harness": {"name": "rein", "version": VERSION,
                    "conformance_level": 3, "supported_features": list(FEATURES)},
        "status": run.status.record_status,
        "started_at": run.started_at,
    }
    if run.parent_run_id:
        record["parent_run_id"] = run.parent_run_id
    if run.finished_at:
        record["finished_at"] = run.finished_at
    binding = dict(run.binding)
    if "params" in binding:
        record["params"] = binding["params"]
    summary = dict(run.summary)
    if summary.get("outputs") is not None:
        record["outputs"] = summary["outputs"]
    if summary.get("graph_success"):
        record["graph_success"] = summary["graph_success"]
    # The AGS usage fields admit no null: what is unknown is left out, never written as 0.
    usage = {k: v for k, v in usage_of(store, run.run_id, include_children=True).items()
             if v is not None}
    if run.finished_at:
        usage["wall_clock_seconds"] = max(0.0, (_t(run.finished_at) - _t(run.started_at))
                                          .total_seconds())
    record["usage"] = usage
    # An edge is resolved again when its source node runs again (``resume_failed``): the
    # latest resolution is the one the run went on with; earlier ones are its history.
    edges: dict[tuple[Any, ...], dict[str, Any]] = {}
    diagnostics: list[dict[str, Any]] = []
    seen_diag: set[tuple[Any, ...]] = set()
    for event in store.events(run.run_id):
        p = event.payload
        if event.type == "edge/resolved":
            key = (p.get("scope"), p["from"], p["to"], p["kind"])
            edge = {"from": p["from"], "to": p["to"], "kind": p["kind"],
                    "active": bool(p["active"]), "when_result": p.get("when_result"),
                    "at": event.at}
            if p.get("scope"):
                edge["x-rein-scope"] = p["scope"]
            earlier = edges.pop(key, None)
            if earlier is not None:
                edge[SUPERSEDED] = [*earlier.pop(SUPERSEDED, []), {
                    k: earlier[k] for k in ("active", "when_result", "at")}]
            edges[key] = edge  # re-inserted: the list follows the latest resolutions
        elif event.type == "diagnostic":
            seen = (p.get("code"), p.get("message"), p.get("node_id"))
            if seen in seen_diag:
                continue
            seen_diag.add(seen)
            diagnostics.append({k: p[k] for k in ("code", "severity", "message", "node_id", "at")
                                if p.get(k) is not None})
    # Listed in the graph's order, not the order parallel work happened to end in
    # (rein.engine.run.record_order); a run recorded before the order was kept: as stored.
    from rein.engine.run.record_order import in_order, order_of  # a record's, not every turn's

    order = order_of(binding)
    if edges:
        record["edges_taken"] = _edges_in_order(list(edges.values()), order)
    if diagnostics:
        record["diagnostics"] = _diagnostics_in_order(diagnostics, order)
    rows = in_order(store.nodes(run.run_id), lambda row: row.node_key, order)
    record["nodes"] = [dict(row.record) for row in rows]
    meta: dict[str, Any] = {}
    if binding.get("approved_digest"):
        meta["x-rein-approved-digest"] = binding["approved_digest"]
    if binding.get("children"):
        meta["x-rein-children"] = binding["children"]
    for name in ("x-rein-forced-resume",):
        if name in binding:
            meta[name] = binding[name]
    if summary.get("human_events"):
        meta["x-rein-graph-human-events"] = summary["human_events"]
    # How the graph itself was approved (a gate's answer is in its node's human_events).
    for row in store.approvals(run_id=run.run_id):
        if row.kind is ApprovalKind.GRAPH and isinstance((row.answer or {}).get("given"),
                                                         Mapping):
            meta["x-rein-approved-given"] = dict((row.answer or {})["given"])
    if meta:
        record["metadata"] = meta
    return record


_KINDS = ("sequence", "conditional", "on_failure")


def _edges_in_order(edges: list[dict[str, Any]], order: RecordOrder | None
                    ) -> list[dict[str, Any]]:
    """By scope instance, then source and target in the scope's order."""
    if order is None:
        return edges

    def key(edge: Mapping[str, Any]) -> tuple[Any, ...]:
        scope = str(edge.get("x-rein-scope") or "")
        kind = str(edge["kind"])
        return (order.of(scope), order.rank(scope, str(edge["from"])),
                order.rank(scope, str(edge["to"])),
                _KINDS.index(kind) if kind in _KINDS else len(_KINDS))

    return sorted(edges, key=key)


def _diagnostics_in_order(found: list[dict[str, Any]], order: RecordOrder | None
                          ) -> list[dict[str, Any]]:
    """A node's in the order of its node (each node's in the order it raised them), then
    those of the run as a whole."""
    if order is None:
        return found
    return sorted(found, key=lambda d: (0, order.of(str(d["node_id"])), "") if d.get(
        "node_id") else (1, (), str(d.get("message", ""))))


@lru_cache(maxsize=1)
def run_schema() -> dict[str, Any]:
    """The normative run record schema, from the installed ``agentic-graph-spec`` package."""
    from importlib.resources import files  # with its own imports: for the record's check only

    path = files("ags") / "schema" / "agentic-graph-run-1.0.schema.json"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


@lru_cache(maxsize=1)
def run_validator() -> Any:
    """The run record schema compiled once, its ``format`` keywords asserted."""
    from rein.formats.jsonschemas import compiled

    return compiled(run_schema(), formats=True)


def record_problems(record: Mapping[str, Any]) -> list[str]:
    """Schema violations of ``record`` (empty when it validates)."""
    from rein.formats.jsonschemas import errors

    return [f"{'/'.join(map(str, e.instance_path))}: {e.message}"
            for e in errors(run_validator(), record)]


def is_terminal(status: RunStatus) -> bool:
    return status.terminal


def _t(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)
