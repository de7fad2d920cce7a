"""The runs list and a run's page, rendered from the store at request time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rein.engine.service import ApprovalRow, Event, Harness, NodeRow, RunRow
from rein.web import pages_queue, views
from rein.web.html import e, error_box, form, page, pretty, status, table

STATUSES = ("running", "waiting", "awaiting_human", "succeeded", "partial", "failed",
            "cancelled")
LOG_SHOWN = 2000  # events rendered into a page; older ones are in the record download


def run_rows(h: Harness, runs: Sequence[RunRow], now: dt.datetime) -> list[list[str]]:
    rows = []
    for run in runs:
        used = views.usage(h, run)
        rows.append([f'<a href="/runs/{e(run.run_id)}"><code>{e(run.run_id)}</code></a>',
                     status(run.status.value), e(run.graph_id), _workspace(run),
                     e(run.started_at[:19]), e(views.duration(run, now)),
                     views.cost(used)])
    return rows


def _workspace(run: RunRow) -> str:
    """Where the run belongs: a store may be shared by several workspaces and machines."""
    if run.workspace is None:  # a child run (its top run's), or one stored before version 6
        return '<span class="muted">—</span>'
    ref = run.workspace
    return (f'<code title="{e(ref.id)}">{e(ref.path)}</code> '
            f'<span class="muted">{e(ref.host)}</span>')


def filtered(h: Harness, *, state: str = "", text: str = "") -> list[RunRow]:
    runs = h.runs()
    if state:
        runs = [r for r in runs if r.status.value == state]
    if text:
        runs = [r for r in runs if text.lower() in f"{r.run_id} {r.graph_id}".lower()]
    return runs


def runs_page(h: Harness, *, state: str, text: str, now: dt.datetime, read_only: bool) -> str:
    options = "".join(f'<option value="{s}"{" selected" if s == state else ""}>{s}</option>'
                      for s in ("", *STATUSES))
    query = f"state={e(state)}&amp;q={e(text)}"
    body = (
        "<h1>Runs</h1>"
        '<form method="get" action="/" class="card" role="search" aria-label="filter runs">'
        f'<label>Status <select name="state">{options}</select></label> '
        f'<label>Graph or run <input type="text" name="q" value="{e(text)}"></label>'
        ' <button>Filter</button></form>'
        + table(("Run", "Status", "Graph", "Workspace", "Started", "Duration", "Cost"),
                run_rows(h, filtered(h, state=state, text=text), now), body_id="runs")
        + '<p class="muted">Live: this list follows the store. Start a run from '
          '<a href="/plans">Plans</a>.</p>')
    return page("Runs", body, read_only=read_only,
                attrs={"data-runs-stream": f"/runs.stream?{query}".replace("&amp;", "&")})


def _criteria(results: Sequence[Any]) -> str:
    return "".join(
        f"<li>{'✓' if c.get('passed') else '✗'} <code>{e(c.get('id'))}</code> "
        f"{e(c.get('kind'))} {e(c.get('severity') or '')}"
        + (f"<div class='muted'>evidence: {e(str(c.get('evidence'))[:600])}</div>"
           if c.get("evidence") not in (None, "") else "") + "</li>"
        for c in results if isinstance(c, dict))


def _attempts(row: NodeRow) -> str:
    """Each attempt with its criteria and their evidence; a failed attempt followed by
    another also shows what that next attempt was told: its failed criteria, required
    first, with their evidence (what the engine feeds back)."""
    attempts = [a for a in row.record.get("attempts") or [] if isinstance(a, dict)]
    out = []
    for i, a in enumerate(attempts):
        results = list((a.get("success") or {}).get("results") or [])
        told = ""
        failed = sorted((r for r in results if isinstance(r, dict) and not r.get("passed")),
                        key=lambda r: r.get("severity") == "advisory")
        if failed and i + 1 < len(attempts):
            told = ("<div class='feedback'>told to attempt "
                    f"{e(attempts[i + 1].get('attempt', i + 2))}: "
                    + "; ".join(f"{e(r.get('id'))} failed"
                                + (f" ({e(str(r.get('evidence'))[:300])})"
                                   if r.get("evidence") not in (None, "") else "")
                                for r in failed) + "</div>")
        error = f"<div class='muted'>{e(a.get('error'))}</div>" if a.get("error") else ""
        out.append(f"<li data-attempt='{e(a.get('attempt', i + 1))}'>attempt "
                   f"{e(a.get('attempt', i + 1))}: {status(a.get('status'))}{error}"
                   f"<ul>{_criteria(results)}</ul>{told}</li>")
    return f"<ol class='attempts'>{''.join(out)}</ol>" if out else ""


def _nodes(rows: Sequence[NodeRow]) -> str:
    parts = []
    for row in rows:
        key = f"{row.scope_path}.{row.node_id}" if row.scope_path else row.node_id
        detail = _attempts(row)
        parts.append(f"<details data-node-detail=\"{e(key)}\"><summary><code>{e(key)}</code> "
                     f"{e(row.type)} {status(row.status.value)}</summary>{detail}"
                     f"{pretty(dict(row.record))}</details>")
    return "".join(parts)


def _budgets(items: Sequence[tuple[str, float | None, float]]) -> str:
    if not items:
        return '<p class="muted">The graph declares no budgets.</p>'
    rows = []
    for name, spent, limit in items:
        if spent is None:  # no worker measured it: not enforced, and not zero
            rows.append([e(name), "unknown", f"{limit:g}", ""])
            continue
        share = 0.0 if limit <= 0 else min(1.0, spent / limit)
        rows.append([e(name), f"{spent:g}", f"{limit:g}",
                     f'<span class="meter"><span style="width:{share * 100:.0f}%"></span></span>'])
    return table(("Budget", "Spent", "Limit", ""), rows)


def log_items(events: Sequence[Event]) -> str:
    return "".join(f'<li data-seq="{ev.seq}"><span class="seq">{ev.seq}</span> '
                   f"{e(ev.type)} {e(views.summary(ev))}</li>" for ev in events[-LOG_SHOWN:])


def shown_path(h: Harness, path: str) -> str:
    """A graph path as the workspace names it (runs store the path as it was given)."""
    try:
        return Path(path).resolve().relative_to(h.workspace).as_posix()
    except (ValueError, OSError):
        return path


def run_page(h: Harness, run: RunRow, *, scope: str, now: dt.datetime, csrf: str,
             read_only: bool) -> str:
    events = h.events(run.run_id)
    pic = views.run_picture(h, run, scope, events)
    used = views.usage(h, run)
    last = events[-1].seq if events else 0
    pending = h.approvals(run_id=run.run_id)
    answered = [a for a in h.approvals(run_id=run.run_id, include_children=False,
                                       pending_only=False) if a.status.value != "pending"]
    crumbs = ""
    if run.parent_run_id:
        crumbs += f'<a href="/runs/{e(run.parent_run_id)}">parent run</a> · '
    if scope:
        crumbs += f'<a href="/runs/{e(run.run_id)}">top level</a> · body of <code>{e(scope)}</code>'
    actions = ""
    if not run.status.terminal and not read_only:
        actions = form(f"/runs/{run.run_id}/cancel", csrf,
                       '<button class="cancel">Cancel the run</button>')
    queue = (f'<div class="notice">{len(pending)} question(s) wait for an answer: '
             f'<a href="/approvals?run={e(run.run_id)}">answer them</a></div>' if pending else
             f'<div class="notice" data-approvals-hint hidden>The approval queue changed: '
             f'<a href="/approvals?run={e(run.run_id)}">see it</a></div>')
    body = (
        f"<p class='muted'>{crumbs}</p>" if crumbs else "") + (
        f"<h1><code>{e(run.run_id)}</code> <span data-run-status class='status "
        f"{e(run.status.value)}'>{e(run.status.value)}</span></h1>"
        f"<div class='card'>graph <code>{e(run.graph_id)}</code> · file "
        f"<code>{e(shown_path(h, run.graph_path))}</code> · started {e(run.started_at[:19])} · "
        f"{e(views.duration(run, now))} · cost {e(views.cost(used))} · "
        f"<a href='/runs/{e(run.run_id)}/record' download>download the run record</a> · "
        f"<a href='/runs/{e(run.run_id)}/report'>what the agent spent</a> "
        f"{actions}</div>{queue}"
        + (f"<div class='notice'>{e(pic.notice)}</div>" if pic.notice else "")
        + "<div class='split'><div><div class='dagwrap' tabindex='0'>" + pic.svg + "</div>"
        + "<h2>Budgets</h2>" + _budgets(views.budgets(h, run, used))
        + "<h2>Nodes</h2><div data-nodes>" + _nodes(h.nodes(run.run_id)) + "</div>"
        + _answered(answered)
        + "</div><div><h2>Events</h2><ol class='log' tabindex='0' aria-label='events'>" + log_items(events) + "</ol></div></div>")
    return page(run.run_id, body, read_only=read_only, attrs={
        "data-stream": f"/runs/{run.run_id}/events?after={last}", "data-scope": scope,
        "data-last-seq": str(last)})


def _answered(rows: Sequence[ApprovalRow]) -> str:
    """The run's answered approvals: what, who, and how each answer was given."""
    if not rows:
        return ""
    items = "".join(f"<li data-approval='{e(a.approval_id)}'><code>{e(a.approval_id)}</code> "
                    f"{e(a.kind.value)} {e(a.request.get('node') or 'the graph')}"
                    f"{pages_queue.given_html(a)}</li>" for a in rows)
    return f"<h2>Approvals</h2><ul class='answered' data-answered>{items}</ul>"


MAX_FRAGMENT_KEYS = 200  # node rows one fragment request may ask for


def fragment(h: Harness, run: RunRow, *, scope: str, keys: Sequence[str], picture: bool,
             after: int) -> dict[str, Any]:
    """What a live page lacks when nodes appear mid-run (map items, loop iterations, child
    runs): the rows of the node ``keys`` it has not got, in the order the run met them, and
    with ``picture`` the DAG drawn again (a subgraph box gains its child run's link).
    ``last``: the last event the fragment reflects, read first, so that the page applies
    again only the events after it (``after``: the last one the page has applied)."""
    events = h.events(run.run_id) if picture else h.log(run.run_id, after=after)
    last = events[-1].seq if events else after
    rows = [row for key in dict.fromkeys(keys[:MAX_FRAGMENT_KEYS])
            if (row := h.node(run.run_id, key)) is not None]
    rows.sort(key=lambda r: r.seq)
    out: dict[str, Any] = {"last": last, "nodes": {
        (f"{r.scope_path}.{r.node_id}" if r.scope_path else r.node_id): _nodes([r])
        for r in rows}, "svg": None}
    if picture:
        out["svg"] = views.run_picture(h, run, scope, events).svg
    return out


def not_found(code: str, message: str, hint: str, *, read_only: bool) -> str:
    return page("Not found", error_box(code, message, hint), read_only=read_only)


__all__ = ["filtered", "fragment", "log_items", "not_found", "run_page", "run_rows",
           "runs_page"]
