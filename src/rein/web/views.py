"""What the pages show, read from the Harness and shaped for rendering; decides nothing.

A run's picture is drawn from the graph file it was started from (the store keeps the
digest, not the document): when the file's digest is no longer the run's, the page says so
and colours what still matches. Loop and map bodies are scopes of the same run, drawn on
their own page (``?scope=``) with each node's latest instance; a subgraph's child run is a
run of its own, linked from its box.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen
from rein.engine.service import Event, Harness, NodeRow, RunRow
from rein.web import svg

if TYPE_CHECKING:
    from rein.formats.loader import LoadLimits

_INSTANCE = re.compile(r"\[(\d+)\]")


class Picture(Frozen):
    svg: str
    notice: str | None  # why the picture may not be the run's graph
    scope: str  # "" for the run's top level, "count_down" for a body


def plan_of(workspace: Path, path: str, limits: LoadLimits | None = None
            ) -> tuple[Any, str] | None:
    """(the plan, its digest) of a graph file, or None when it cannot be planned. Cached by
    the file's size and modification time: every tab on a run page draws the same graph,
    and planning a large one costs more than the rest of the page."""
    file = Path(path) if Path(path).is_absolute() else workspace / path
    try:
        st = file.stat()
    except OSError:
        return None
    return _planned(str(file), path, st.st_mtime_ns, st.st_size, limits)


@functools.lru_cache(maxsize=32)
def _planned(file: str, path: str, _mtime_ns: int, _size: int, limits: LoadLimits | None
             ) -> tuple[Any, str] | None:
    from rein.formats.ags import validate_path
    from rein.formats.ags.plan import build_plan
    from rein.formats.loader import DEFAULT_LIMITS

    report = validate_path(file, limits=limits or DEFAULT_LIMITS)
    if report.errors or report.document is None or report.digest is None:
        return None
    return build_plan(report.document.data, source=path, digest=report.digest), report.digest


def scope_of(plan: Any, path: str) -> Any | None:
    for scope in plan.scopes():
        if scope.path == path:
            return scope
    return None


def picture(scope: Any, *, statuses: Mapping[str, str] | None = None,
            counts: Mapping[str, str] | None = None, hrefs: Mapping[str, str] | None = None,
            taken: frozenset[tuple[str, str]] = frozenset()) -> str:
    statuses, counts, hrefs = statuses or {}, counts or {}, hrefs or {}
    boxes = [svg.Box(id=n.id, title=n.title, type=n.type, status=statuses.get(n.id, "pending"),
                     count=counts.get(n.id, ""), href=hrefs.get(n.id)) for n in scope.nodes]
    arrows = [svg.Arrow(source=e.source, target=e.target, kind=e.kind,
                        taken=(e.source, e.target) in taken, label=branch(e))
              for e in scope.edges]
    return svg.render(boxes, arrows, order=scope.order)


def branch(edge: Any) -> str:
    """What an edge's picture says about it: its label, else its condition, else for a
    failure edge that it is one; nothing for a plain sequence."""
    if edge.label:
        return str(edge.label)
    if edge.when:
        return str(edge.when)
    return "on failure" if edge.kind == "on_failure" else ""


def _local(row: NodeRow, scope: str) -> str | None:
    """The id in ``scope`` of a node row, or None when the row is in another scope."""
    bare = _INSTANCE.sub("", row.scope_path)
    return row.node_id if bare == scope else None


def run_picture(h: Harness, run: RunRow, scope: str, events: Sequence[Event]) -> Picture:
    top = run
    while top.parent_run_id is not None:
        top = h.run(top.parent_run_id)
    planned = plan_of(h.workspace, top.graph_path, h.config.limits)
    if planned is None:
        return Picture(svg="", scope=scope, notice=f"{top.graph_path} cannot be read or "
                       "planned now, so the run is listed below without its picture")
    plan, digest = planned
    notice = None if digest == top.graph_digest else (
        f"{top.graph_path} changed since this run started; the picture is of the file as "
        "it is now")
    where = scope
    if run.parent_run_id is not None and run.parent_node_key:
        where = ".".join(p for p in (_INSTANCE.sub("", run.parent_node_key), scope) if p)
    found = scope_of(plan, where)
    if found is None:
        return Picture(svg="", scope=scope, notice=f"no scope {where!r} in {top.graph_path}")
    rows = h.nodes(run.run_id)
    # The boxes show each node as of the last event in ``events``, the one the page's stream
    # resumes after: node rows are read later and may be newer, and a page drawn from them
    # would have the stream's replay move a box back (succeeded, then running again).
    where_of: dict[str, str | None] = {str(r.node_key): _local(r, scope) for r in rows}
    statuses: dict[str, str] = {}
    for ev in events:
        key, state = ev.payload.get("node"), ev.payload.get("status")
        if ev.type.startswith("node/") and isinstance(state, str) \
                and (local := where_of.get(str(key))) is not None:
            statuses[local] = state  # the latest instance wins, as in the page's script
    instances: dict[str, set[str]] = {}
    for row in rows:
        head = row.scope_path.split(".")[0] if row.scope_path else ""
        m = _INSTANCE.search(head)
        if m and not scope:
            instances.setdefault(_INSTANCE.sub("", head), set()).add(m.group(1))
    counts = {k: f"{len(v)} ran" for k, v in instances.items()}
    hrefs: dict[str, str] = {}
    for n in found.nodes:
        if n.type in ("loop", "map") and n.child is not None:
            hrefs[n.id] = f"/runs/{run.run_id}?scope={_join(scope, n.id)}"
    for child in h.child_runs(run.run_id):
        if child.parent_node_key:
            hrefs[_INSTANCE.sub("", child.parent_node_key).split(".")[-1]] = \
                f"/runs/{child.run_id}"
    taken = frozenset((str(e.payload["from"]), str(e.payload["to"])) for e in events
                      if e.type == "edge/resolved" and e.payload.get("active")
                      and _INSTANCE.sub("", str(e.payload.get("scope") or "")) == scope)
    return Picture(svg=picture(found, statuses=statuses, counts=counts, hrefs=hrefs,
                               taken=taken), notice=notice, scope=scope)


def _join(a: str, b: str) -> str:
    return f"{a}.{b}" if a else b


def _time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def duration(run: RunRow, now: dt.datetime) -> str:
    """The run's wall time (its start to its end, or now), said as such: the one definition
    the commands use too."""
    start, end = _time(run.started_at), _time(run.finished_at)
    if start is None:
        return ""
    seconds = max(0.0, ((end or now) - start).total_seconds())
    if seconds < 60:
        return f"wall {seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"wall {minutes} min {secs:02d} s" if minutes < 60 else \
        f"wall {minutes // 60} h {minutes % 60} min"


def usage(h: Harness, run: RunRow) -> dict[str, Any]:
    return h.usage(run.run_id)


def cost(used: Mapping[str, Any]) -> str:
    """The run's cost for a cell: ``unknown`` where a worker could not measure it (a driver
    that reported no usage), never ``$0.0000``."""
    value = used.get("cost_usd")
    return "unknown" if value is None else f"${float(value):.4f}"


def summary(event: Event) -> str:
    """One line of the event log beside the picture."""
    p = event.payload
    parts = [str(p[k]) for k in ("node", "status", "reason", "kind", "approval_id", "code",
                                 "message") if p.get(k) not in (None, "")]
    if event.type == "edge/resolved":
        parts = [f"{p.get('from')} → {p.get('to')}", "active" if p.get("active") else "inactive"]
    return " ".join(parts)[:200]


def budgets(h: Harness, run: RunRow, used: Mapping[str, Any]
            ) -> list[tuple[str, float | None, float]]:
    """(name, spent, limit) for each limit the run's graph declares; spent is ``None``
    where no worker measured it."""
    limits = (run.binding.get("constraints") if isinstance(run.binding, Mapping) else None)
    if not isinstance(limits, Mapping):
        planned = plan_of(h.workspace, run.graph_path, h.config.limits)
        limits = planned[0].constraints if planned is not None else {}
    spent = {"max_cost_usd": used.get("cost_usd"),
             "max_tokens": used.get("total_tokens"),
             "max_node_executions": used.get("node_executions", 0),
             "max_tool_calls": used.get("tool_calls", 0),
             "max_wall_clock_seconds": used.get("wall_clock_seconds", 0.0)}
    return [(k, None if spent[k] is None else float(spent[k]), float(v))
            for k, v in limits.items() if k in spent and isinstance(v, (int, float))]


__all__ = ["Picture", "budgets", "cost", "duration", "picture", "plan_of", "run_picture", "scope_of",
           "summary", "usage"]
