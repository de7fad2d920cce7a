"""The evaluations of the workspace (`rein eval`) and one evaluation's results.

An evaluation's page is its ``result.json`` drawn the way ``rein eval --html`` draws it (the
chart of solve rates with their intervals, the scenarios, the comparisons, the validation,
the risk flags and the failures by criterion), inside the console's layout. An evaluation
still running (no result yet) says so and names the command that resumes it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from rein.eval.ledger import EVALS, listing
from rein.eval.report_html import body
from rein.web.html import e, page, table

if TYPE_CHECKING:
    from rein.web.console import Console

_ID = re.compile(r"^eval-[0-9T]+-[0-9a-f]+$")


def evals_page(c: Console) -> str:
    rows = [[f"<a href='/evals/{e(x['evaluation'])}'><code>{e(x['evaluation'])}</code></a>",
             e(str(x["created_at"] or "")[:19]), e(", ".join(x["configurations"])),
             str(x["scenarios"]), "finished" if x["finished"] else "not finished"]
            for x in listing(c.h.workspace)]
    content = ("<h1>Evaluations</h1>"
               + (table(("Evaluation", "Started", "Configurations", "Scenarios", "State"),
                        rows, body_id="evals") if rows else
                  "<p>No evaluation in this workspace. Run one with <code>rein eval PATH "
                  "--config NAME</code>; its results appear here.</p>"))
    return page("Evaluations", content, read_only=c.read_only)


def eval_page(c: Console, evaluation: str) -> tuple[int, str]:
    folder = c.h.workspace / EVALS / evaluation
    if not _ID.match(evaluation) or not (folder / "plan.json").is_file():
        return 404, page("Evaluation", f"<h1>No evaluation {e(evaluation)}</h1>"
                         "<p><a href='/evals'>All evaluations</a></p>", read_only=c.read_only)
    try:
        result: Any = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 200, page("Evaluation", f"<h1>Evaluation {e(evaluation)}</h1><p>Not finished: "
                         f"it runs, or was stopped. <code>rein eval --resume {e(evaluation)}"
                         "</code> continues it.</p>", read_only=c.read_only)
    return 200, page(f"Evaluation {evaluation}", f"<div class='eval'>{body(result)}</div>",
                     read_only=c.read_only)


def routes(c: Console) -> list[Route]:
    async def list_(request: Request) -> Response:
        return HTMLResponse(evals_page(c))

    async def one(request: Request) -> Response:
        code, html = eval_page(c, str(request.path_params["evaluation"]))
        return HTMLResponse(html, status_code=code)

    return [Route("/evals", c.guarded(list_)), Route("/evals/{evaluation}", c.guarded(one))]


__all__ = ["eval_page", "evals_page", "routes"]
