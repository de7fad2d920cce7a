"""The usage report's pages: ``/runs/{run_id}/report`` (what the driving agent spent on a
run, as ``rein runs report`` prints it) and ``/dev/report`` (the development flow's, as
``rein dev report``).

The content is :func:`rein.web.usage_html.body` of the same report the commands build
(:mod:`rein.engine.cases.usage_report`), so the page and the commands agree. A page only reads:
what it attributes from the agent's records is shown, not recorded (``rein runs report``
records it, and the run's budgets count it from then on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from rein.web.html import e, page
from rein.web.usage_html import body

if TYPE_CHECKING:
    from rein.web.console import Console


def run_report(c: Console, request: Request) -> Response:
    from rein.errors import ReinError
    from rein.web.pages_runs import not_found

    try:
        run = c.h.run(request.path_params["run_id"])
    except ReinError as exc:
        return HTMLResponse(not_found(exc.code, exc.message, exc.hint or "",
                                      read_only=c.read_only), status_code=404)
    report = c.h.usage_report([run.run_id])
    back = f"<p><a href='/runs/{e(run.run_id)}'>back to the run</a></p>"
    return HTMLResponse(page(f"report {run.run_id}", back + body(report),
                             read_only=c.read_only))


def dev_report(c: Console) -> Response:
    from rein.dev import flow, report

    state = flow.load_flow(c.h.workspace)
    if state is None:
        return HTMLResponse(page("dev report", "<p>This workspace has no development flow: "
                                               "start one with <code>rein dev</code>.</p>",
                                 read_only=c.read_only))
    data: dict[str, Any] = report.build(c.h, state)
    return HTMLResponse(page("dev report", body(data), read_only=c.read_only))


def routes(c: Console) -> list[Route]:
    async def run_(request: Request) -> Response:
        return run_report(c, request)

    async def dev_(request: Request) -> Response:
        return dev_report(c)

    return [Route("/runs/{run_id}/report", c.guarded(run_)),
            Route("/dev/report", c.guarded(dev_))]


__all__ = ["dev_report", "routes", "run_report"]
