"""The runs list and a run's page, rendered from the store at request time."""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.engine.service import ApprovalRow, Event, Harness, NodeRow, RunRow
from rein.web import pages_queue, review, views
from rein.web.auth import Denied
from rein.web.html import e, error_box, form, moment, page, pretty, status, table
from rein.web.states import look

# How the engine marks an attempt that a crash or a stop cut off (rein.engine.run.recovery).
INTERRUPTED = "x-rein-interrupted"
STATUSES = ("running", "waiting", "awaiting_human", "succeeded", "partial", "failed",
            "cancelled")
LOG_SHOWN = 2000  # events rendered into a page; older ones are in the record download


PAGE_SIZE = 50  # runs on one page of the list
MAX_PAGE_SIZE = 500


class Query(Frozen):
    """What the runs list shows: a state, a text, a start-time window, and where the page
    starts. ``older``: the (started_at, run_id) of the last run of the page before; the
    page holds the runs strictly older than it, so runs started meanwhile, which sort
    before it, never shift the page (keyset paging)."""

    state: str = ""
    text: str = ""
    since: str = ""  # as typed: YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], read as UTC
    until: str = ""
    older: tuple[str, str] | None = None
    size: int = PAGE_SIZE

    def params(self, *, older: tuple[str, str] | None = None, paged: bool = True
               ) -> dict[str, str]:
        """The query as URL parameters (the empty ones left out); ``older`` replaces the
        page's own start, ``paged=False`` drops it (the first page of the same filter)."""
        out = {"state": self.state, "q": self.text, "since": self.since,
               "until": self.until}
        at = older if older is not None else (self.older if paged else None)
        if at is not None:
            out["older"] = f"{at[0]}~{at[1]}"
        if self.size != PAGE_SIZE:
            out["n"] = str(self.size)
        return {k: v for k, v in out.items() if v}

    def url(self, path: str, **kw: Any) -> str:
        query = urllib.parse.urlencode(self.params(**kw))
        return f"{path}?{query}" if query else path


def _instant(text: str, *, end: bool) -> dt.datetime:
    """A typed bound as a UTC instant; a bare date covers its whole day."""
    value = dt.datetime.fromisoformat(text)
    if len(text) == 10 and end:
        value += dt.timedelta(days=1) - dt.timedelta(microseconds=1)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def query(params: Mapping[str, str]) -> Query:
    """The runs list's query from a request's parameters; :class:`Denied` (WEB400) for a
    time or a page start that cannot be read, with what to type instead."""
    since, until = params.get("since", "").strip(), params.get("until", "").strip()
    for name, text in (("since", since), ("until", until)):
        try:
            if text:
                _instant(text, end=False)
        except ValueError:
            raise Denied(400, "WEB400", f"{name}={text!r} is not a time",
                         "type a date (2026-03-01) or a date and time (2026-03-01T14:30), "
                         "in UTC") from None
    older = None
    if params.get("older"):
        started, sep, run_id = params["older"].partition("~")
        if not sep or not run_id:
            raise Denied(400, "WEB400", f"older={params['older']!r} is not a page start",
                         "follow the list's own “older runs” link, or drop older=")
        older = (started, run_id)
    size = params.get("n", "")
    return Query(state=params.get("state", ""), text=params.get("q", ""), since=since,
                 until=until, older=older,
                 size=min(int(size), MAX_PAGE_SIZE) if size.isdigit() and int(size) > 0
                 else PAGE_SIZE)


def run_rows(h: Harness, runs: Sequence[RunRow], now: dt.datetime) -> list[list[str]]:
    rows = []
    for run in runs:
        used = views.usage(h, run)
        rows.append([f'<a href="/runs/{e(run.run_id)}"><code>{e(run.run_id)}</code></a>',
                     status(run.status.value), e(run.graph_id), _workspace(run),
                     moment(run.started_at), e(views.duration(run, now)),
                     views.cost(used)])
    return rows


def _workspace(run: RunRow) -> str:
    """Where the run belongs: a store may be shared by several workspaces and machines."""
    if run.workspace is None:  # a child run (its top run's), or one stored before version 6
        return '<span class="muted">—</span>'
    ref = run.workspace
    return (f'<code title="{e(ref.id)}">{e(ref.path)}</code> '
            f'<span class="muted">{e(ref.host)}</span>')


def _key(run: RunRow) -> tuple[dt.datetime, str]:
    """Where a run sorts: by its start as an instant (stores may spell the offset
    differently), then by its id, so that two runs started in the same instant keep one
    order."""
    try:
        at = _instant(run.started_at, end=False)
    except ValueError:
        at = dt.datetime.min.replace(tzinfo=dt.UTC)
    return at, run.run_id


def filtered(h: Harness, q: Query) -> tuple[list[RunRow], tuple[str, str] | None]:
    """One page of the runs the query selects, newest first, and the start of the next
    page (None on the last)."""
    runs = h.runs()
    if q.state:
        runs = [r for r in runs if r.status.value == q.state]
    if q.text:
        runs = [r for r in runs if q.text.lower() in f"{r.run_id} {r.graph_id}".lower()]
    low = _instant(q.since, end=False) if q.since else None
    high = _instant(q.until, end=True) if q.until else None
    keyed = [(_key(r), r) for r in runs]
    if low is not None:
        keyed = [(k, r) for k, r in keyed if k[0] >= low]
    if high is not None:
        keyed = [(k, r) for k, r in keyed if k[0] <= high]
    if q.older is not None:
        try:
            start = (_instant(q.older[0], end=False), q.older[1])
        except ValueError:
            start = (dt.datetime.max.replace(tzinfo=dt.UTC), q.older[1])
        keyed = [(k, r) for k, r in keyed if k < start]
    keyed.sort(key=lambda kr: kr[0], reverse=True)
    shown = [r for _, r in keyed[:q.size]]
    more = len(keyed) > q.size
    return shown, ((shown[-1].started_at, shown[-1].run_id) if more and shown else None)


def _pager(q: Query, following: tuple[str, str] | None) -> str:
    links = []
    if q.older is not None:
        links.append(f'<a href="{e(q.url("/", paged=False))}" data-page="newest">'
                     "newest runs</a>")
    if following is not None:
        links.append(f'<a href="{e(q.url("/", older=following))}" data-page="older">'
                     "older runs →</a>")
    return (f'<nav class="pager" aria-label="pages of runs">{" · ".join(links)}</nav>'
            if links else "")


def runs_page(h: Harness, q: Query | None, *, now: dt.datetime, read_only: bool,
              error: tuple[str, str, str | None] | None = None,
              typed: Mapping[str, str] | None = None) -> str:
    """The runs list of ``q``; with ``error`` (a query that cannot be read), the form
    again with what was ``typed`` and the error above it."""
    shown = q or Query()
    typed = typed or shown.params()
    options = "".join(
        f'<option value="{s}"{" selected" if s == typed.get("state", "") else ""}>'
        f'{e(look(s).label) if s else "any"}</option>' for s in ("", *STATUSES))
    form_html = (
        '<form method="get" action="/" class="card filters" role="search" '
        'aria-label="filter runs">'
        f'<label>Status <select name="state">{options}</select></label> '
        f'<label>Graph or run <input type="text" name="q" value="{e(typed.get("q", ""))}">'
        '</label> '
        f'<label>Started since <input type="text" name="since" placeholder="2026-03-01" '
        f'value="{e(typed.get("since", ""))}"></label> '
        f'<label>until <input type="text" name="until" placeholder="2026-03-01T18:00" '
        f'value="{e(typed.get("until", ""))}"></label> '
        '<span class="muted">(UTC)</span> <button>Filter</button></form>')
    if q is None:
        assert error is not None
        return page("Runs", "<h1>Runs</h1>" + error_box(*error) + form_html,
                    read_only=read_only)
    runs, following = filtered(h, q)
    body = (
        "<h1>Runs</h1>" + form_html
        + table(("Run", "Status", "Graph", "Workspace", "Started", "Duration", "Cost"),
                run_rows(h, runs, now), body_id="runs")
        + _pager(q, following)
        + '<p class="muted">Live: this page follows the store. Start a run from '
          '<a href="/plans">Plans</a>.</p>')
    return page("Runs", body, read_only=read_only,
                attrs={"data-runs-stream": q.url("/runs.stream")})


def _criteria(results: Sequence[Any]) -> str:
    return "".join(
        f"<li>{'✓' if c.get('passed') else '✗'} <code>{e(c.get('id'))}</code> "
        f"{e(c.get('kind'))} {e(c.get('severity') or '')}"
        + (f"<div class='muted'>evidence: {e(str(c.get('evidence'))[:600])}</div>"
           if c.get("evidence") not in (None, "") else "") + "</li>"
        for c in results if isinstance(c, dict))


def _attempt_list(row: NodeRow) -> list[Mapping[str, Any]]:
    return [a for a in row.record.get("attempts") or [] if isinstance(a, Mapping)]


def _reason(a: Mapping[str, Any], results: Sequence[Any]) -> str:
    """Why an attempt ended as it did, in a line: its error, else its failed criteria."""
    error = a.get("error")
    if isinstance(error, Mapping):
        error = ": ".join(str(error[k]) for k in ("class", "code", "message") if error.get(k))
    if error:
        return str(error)
    failed = [str(r.get("id")) for r in results if isinstance(r, Mapping) and not r.get("passed")]
    return ("criteria failed: " + ", ".join(failed)) if failed else ""


def _attempts(row: NodeRow) -> str:
    """Each attempt, folded to its outcome and reason, opening onto its criteria and their
    evidence; a failed attempt followed by another also shows what that next attempt was
    told: its failed criteria, required first, with their evidence (what the engine feeds
    back)."""
    attempts = _attempt_list(row)
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
        reason = _reason(a, results)
        # An attempt with no status yet is the one under way (or cut off by a stop).
        state = a.get("status") or ("interrupted" if a.get(INTERRUPTED) else "running")
        out.append(f"<li data-attempt='{e(a.get('attempt', i + 1))}'><details><summary>"
                   f"attempt {e(a.get('attempt', i + 1))} {status(state)}"
                   + (f" <span class='reason' data-reason>{e(reason[:300])}</span>"
                      if reason else "")
                   + f"</summary><ul>{_criteria(results)}</ul>{told}</details></li>")
    return f"<ol class='attempts'>{''.join(out)}</ol>" if out else ""


def node_rows(rows: Sequence[NodeRow]) -> str:
    parts = []
    for row in rows:
        key = f"{row.scope_path}.{row.node_id}" if row.scope_path else row.node_id
        count = len(_attempt_list(row))
        tally = (f" <span class='muted' data-attempts='{count}'>{count} attempt"
                 f"{'' if count == 1 else 's'}</span>" if count else "")
        parts.append(f"<details data-node-detail=\"{e(key)}\"><summary><code>{e(key)}</code> "
                     f"{e(row.type)} {status(row.status.value)}{tally}</summary>"
                     f"{_attempts(row)}{pretty(dict(row.record))}</details>")
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
    """The log's lines, each with its time: the date where it changes (and on the first
    line), the time of day on the others."""
    out, day = [], ""
    for ev in events[-LOG_SHOWN:]:
        today = str(ev.at)[:10]
        out.append(f'<li data-seq="{ev.seq}"><span class="seq">{ev.seq}</span> '
                   f"{moment(ev.at, day=today != day)} "
                   f"{e(ev.type)} {e(views.summary(ev))}</li>")
        day = today
    return "".join(out)


def shown_path(h: Harness, path: str) -> str:
    """A graph path as the workspace names it (runs store the path as it was given)."""
    try:
        return Path(path).resolve().relative_to(h.workspace).as_posix()
    except (ValueError, OSError):
        return path


def pending_cards(h: Harness, run: RunRow, *, csrf: str, read_only: bool) -> str:
    """The questions the run (and its child runs) waits on, as the approval queue shows
    them: the same card, the same form to the same address (:func:`pages_queue.
    approval_card`), so an answer given here is bound and checked exactly as one given
    there, and comes back to this page."""
    rows = h.approvals(run_id=run.run_id)
    cards = "".join(pages_queue.approval_card(r, csrf=csrf, read_only=read_only,
                                              workspace=h.workspace,
                                              back=f"/runs/{run.run_id}",
                                              secrets=review.secrets_of(h)) for r in rows)
    return (f"<h2 id='waiting'>Waiting for an answer</h2>{cards}" if rows else "")


def run_page(h: Harness, run: RunRow, *, scope: str, now: dt.datetime, csrf: str,
             read_only: bool, error: tuple[str, str, str | None] | None = None) -> str:
    events = h.events(run.run_id)
    # The run as of now, read after the events the page's stream resumes after: read
    # before them (as the request found it), a run that ended in between kept its old
    # status on the page for good, its run/finished drawn in the log but never streamed.
    # Read after, it is as new as the last event or newer, and the stream's replay ends
    # on the same status.
    run = h.find_run(run.run_id) or run
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
             f'<a href="#waiting">answer them below</a> or in '
             f'<a href="/approvals?run={e(run.run_id)}">the approval queue</a></div>'
             if pending else "")
    # A run an agent approved in its sandbox: an answer given here is recorded, and the run
    # waits for the agent to take it up (rein.engine.service.Harness.not_continued_here).
    elsewhere = None if run.status.terminal else h.not_continued_here(h.owner(run.run_id))
    if elsewhere is not None:
        queue += (f"<div class='notice' data-not-continued>Answers given here are recorded; "
                  f"the run is not continued here: {e(elsewhere)}.</div>")
    body = (error_box(*error) if error else "") + (
        f"<p class='muted'>{crumbs}</p>" if crumbs else "") + (
        f"<h1><code>{e(run.run_id)}</code> {status(run.status.value, attrs='data-run-status')}"
        "</h1>"
        f"<div class='card'>graph <code>{e(run.graph_id)}</code> · file "
        f"<code>{e(shown_path(h, run.graph_path))}</code> · started {moment(run.started_at)} · "
        f"{e(views.duration(run, now))} · cost {e(views.cost(used))} · "
        f"<a href='/runs/{e(run.run_id)}/record' download>download the run record</a> · "
        f"<a href='/runs/{e(run.run_id)}/report'>what the agent spent</a> "
        f"{actions}</div>{queue}"
        + (f"<div class='notice'>{e(pic.notice)}</div>" if pic.notice else "")
        + "<div class='split'><div><div class='dagwrap' tabindex='0'>" + pic.svg + "</div>"
        + "<section data-approvals aria-label='questions waiting for an answer'>"
        + pending_cards(h, run, csrf=csrf, read_only=read_only) + "</section>"
        + "<h2>Budgets</h2>" + _budgets(views.budgets(h, run, used))
        + "<h2>Nodes</h2><div data-nodes>" + node_rows(h.nodes(run.run_id)) + "</div>"
        + _answered(answered)
        + "</div><div><h2>Events <span class='muted'>(times in UTC)</span></h2>"
        + "<ol class='log' tabindex='0' aria-label='events'>" + log_items(events)
        + "</ol></div></div>")
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
             after: int, approvals: bool = False, csrf: str = "",
             read_only: bool = True) -> dict[str, Any]:
    """What a live page lacks when nodes appear mid-run (map items, loop iterations, child
    runs): the rows of the node ``keys`` it has not got, in the order the run met them, and
    with ``picture`` the DAG drawn again (a subgraph box gains its child run's link).
    ``last``: the last event the fragment reflects, read first, so that the page applies
    again only the events after it (``after``: the last one the page has applied). With
    ``approvals``, the cards of the questions the run waits on, as the page renders them
    (a question asked or answered while the page is open)."""
    events = h.events(run.run_id) if picture else h.log(run.run_id, after=after)
    last = events[-1].seq if events else after
    rows = [row for key in dict.fromkeys(keys[:MAX_FRAGMENT_KEYS])
            if (row := h.node(run.run_id, key)) is not None]
    rows.sort(key=lambda r: r.seq)
    out: dict[str, Any] = {"last": last, "nodes": {
        (f"{r.scope_path}.{r.node_id}" if r.scope_path else r.node_id): node_rows([r])
        for r in rows}, "svg": None}
    if picture:
        out["svg"] = views.run_picture(h, run, scope, events).svg
    if approvals:
        out["approvals"] = pending_cards(h, run, csrf=csrf, read_only=read_only)
    return out


def not_found(code: str, message: str, hint: str, *, read_only: bool) -> str:
    return page("Not found", error_box(code, message, hint), read_only=read_only)


__all__ = ["PAGE_SIZE", "Query", "filtered", "fragment", "log_items", "node_rows", "not_found",
           "pending_cards", "query", "run_page", "run_rows", "runs_page"]
