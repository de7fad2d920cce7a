"""The development flow's page: its features, their checks and commits, and why it stopped.

What is shown is :func:`rein.dev.view.snapshot`, the reading `rein dev status` makes, so the
page and the command agree. The flow advances in whatever process drives it (`rein dev`,
`rein submit`); the page follows the store the way the runs list does
(:func:`rein.web.streams.runs_stream`: the section is sent again whenever it changed), which
also catches the flow moving from its planning run to its feature run. The stream reads the
flow again only when the follower of the event log sees a commit
(:meth:`rein.engine.service.Harness.next_change`), or every ``RUNS_REFRESH_SECONDS`` at the
latest, never on a timer of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from rein.dev.view import snapshot
from rein.web import streams
from rein.web.html import e, page, status, table

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.web.console import Console

EVIDENCE_SHOWN = 1200  # characters of one check's evidence drawn into the page


def _run_link(run_id: str | None, label: str) -> str:
    if not run_id:
        return f"{e(label)} <span class='muted'>not started</span>"
    return f"{e(label)} <a href='/runs/{e(run_id)}'><code>{e(run_id)}</code></a>"


def _checks(feature: Mapping[str, Any]) -> str:
    out = []
    for a in feature.get("checks") or ():
        results = "".join(
            f"<li data-check='{e(r['id'])}' data-passed='{str(r['passed']).lower()}'>"
            f"{'✓' if r['passed'] else '✗'} <code>{e(r['id'])}</code>"
            + (f"<pre tabindex='0' class='evidence'>{e(str(r['evidence'])[:EVIDENCE_SHOWN])}</pre>"
               if r.get("evidence") else "") + "</li>"
            for r in a["results"])
        error = f"<div class='muted'>{e(a['error'])}</div>" if a.get("error") else ""
        out.append(f"<li>attempt {e(a['attempt'])} {status(a.get('status') or 'running')}{error}"
                   f"<ul>{results}</ul></li>")
    return f"<ol class='attempts'>{''.join(out)}</ol>" if out else \
        "<p class='muted'>No attempt yet.</p>"


def _feature_rows(features: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for f in features:
        commit = f"<code>{e(f['commit'])}</code>" if f.get("commit") else ""
        needs = ", ".join(str(d) for d in f.get("depends_on") or ())
        rows.append([f"<code>{e(f['id'])}</code>", e(f["title"]),
                     status(f["status"], attrs=f"data-feature='{e(f['id'])}'"), str(f["attempts"]), e(needs), commit])
    return rows


def section(snap: Mapping[str, Any] | None) -> str:
    """Everything below the title: the part the live stream sends again."""
    if snap is None:
        return ("<p>This workspace has no development flow. Start one with "
                "<code>rein dev</code> in the root of a git repository (see the "
                "development flow's documentation); this page follows it from then on.</p>")
    reason = str(snap["reason"])
    clean = (f" · the next instruction asks for a clean context: {e(snap['clean_context'])}"
             if snap.get("clean_context") else "")
    features = snap["features"]
    details = "".join(
        f"<details data-feature-detail='{e(f['id'])}'><summary><code>{e(f['id'])}</code> "
        f"{e(f['title'])} {status(f['status'])}</summary>"
        + (f"<pre tabindex='0' class='evidence'>{e(f['last_failure'])}</pre>" if f.get("last_failure")
           else "") + _checks(f) + "</details>"
        for f in features)
    return (
        f"<div class='card stop' data-stop='{e(reason)}'><b>Stopped: "
        f"{status(reason)}</b> "
        f"{e(snap['message'])}<div class='muted'>next: {e(snap['next_action'])}</div></div>"
        f"<div class='card'>stage <b>{e(snap['stage'])}</b> · plan <code>"
        f"{e(snap['plan_id'])}</code> · {_run_link(snap['planning_run'], 'planning run')} · "
        f"{_run_link(snap['features_run'], 'feature run')} · context policy "
        f"<code>{e(snap['context_policy'])}</code>{clean}</div>"
        + ("<h2>Features</h2>"
           + table(("Feature", "Title", "State", "Attempts", "Depends on", "Commit"),
                   _feature_rows(features))
           + "<h2>Verify results</h2>" + details if features else
           "<p class='muted'>No feature plan yet: the planning run is making one.</p>"))


def read(h: Harness) -> dict[str, Any] | None:
    return snapshot(h)


def flow_routes(c: Console, *, path: str, title: str, section_of: Callable[[], str]
                ) -> list[Route]:
    """A flow's page (``path``) and its live stream (``path.stream``): ``section_of`` renders
    where the flow stands, again after every commit (here or in another process). The
    development and specification flows' pages are both built here."""

    async def flow_page(request: Request) -> Response:
        body = f"<h1>{e(title)}</h1><div id='dev-flow'>{section_of()}</div>"
        return HTMLResponse(page(title, body, read_only=c.read_only,
                                 attrs={"data-dev-stream": f"{path}.stream"}))

    async def stream(request: Request) -> Response:
        return flow_stream(c, section_of)

    return [Route(path, c.guarded(flow_page)),
            Route(f"{path}.stream", c.guarded(stream))]


def flow_stream(c: Console, section_of: Callable[[], str]) -> Response:
    """The flow's section as server-sent events: now, then after every commit."""
    seen = c.h.changes_seen

    def render() -> tuple[Any, str]:
        html = section_of()
        return html, html

    async def wait() -> None:  # until something is committed (here or in another process)
        nonlocal seen
        seen = await c.h.next_change(seen, streams.RUNS_REFRESH_SECONDS)

    return StreamingResponse(streams.runs_stream(render, wait=wait),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-store"})


def dev_section(c: Console) -> str:
    """Where the development flow stands, as its page shows it."""
    return section(read(c.h))


def routes(c: Console) -> list[Route]:
    return flow_routes(c, path="/dev", title="Development flow",
                       section_of=lambda: dev_section(c))


__all__ = ["routes", "section"]
