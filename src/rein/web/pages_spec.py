"""The specification flow's page: its documents, their states, the published plan, and why
it stopped.

What is shown is :func:`rein.spec.flow.status`, the reading `rein spec status` makes (it
changes nothing), so the page and the command agree. The section is sent again whenever it
changed, as on the development flow's page (the same stream and script).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import Route

from rein.errors import ReinError
from rein.web.html import e, status, table
from rein.web.pages_dev import flow_routes

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.web.console import Console

EVIDENCE_SHOWN = 1200  # characters of a refusal's evidence drawn into the page
# The flow's own word for its end; a node's ``ready`` (waiting for a slot) is another state.
_READY = {"ready": "done"}


def read(h: Harness) -> dict[str, Any] | None:
    from rein.spec.flow import load_flow, status

    if load_flow(h.workspace) is None:
        return None
    try:
        return status(h)
    except ReinError:
        return None


def section(snap: Mapping[str, Any] | None) -> str:
    """Everything below the title: the part the live stream sends again."""
    if snap is None:
        return ("<p>This workspace has no specification flow. Start one with "
                "<code>rein spec</code> beside a brief in <code>specs/</code> (see the "
                "specification flow's documentation); this page follows it from then on.</p>")
    reason = str(snap["reason"])
    rows = [[f"<code>{e(d['path'])}</code>", e(d["title"]),
             status(d["status"], attrs=f"data-document='{e(d['document'])}'"), str(d["attempts"])]
            for d in snap["documents"]]
    failures = "".join(
        f"<details data-document-detail='{e(d['document'])}' open><summary><code>"
        f"{e(d['path'])}</code> {status('failed')}</summary><pre tabindex='0' class='evidence'>"
        f"{e(str(d['last_failure'])[:EVIDENCE_SHOWN])}</pre></details>"
        for d in snap["documents"] if d.get("last_failure"))
    published = snap.get("published") or {}
    plan = (f"<div class='card' data-published='{e(snap['plan'])}'>published <code>"
            f"{e(snap['plan'])}</code> at {e(published.get('at'))}: `rein dev` builds it</div>"
            if published else "")
    notices = "".join(f"<li>{e(n)}</li>" for n in snap.get("notices") or [])
    return (
        f"<div class='card stop' data-stop='{e(reason)}'><b>Stopped: "
        f"{status(_READY.get(reason, reason))}</b> "
        f"{e(snap['message'])}<div class='muted'>next: {e(snap['next_action'])}</div></div>"
        f"<div class='card'>specification <code>{e(snap['spec_id'])}</code> · run <a "
        f"href='/runs/{e(snap['run_id'])}'><code>{e(snap['run_id'])}</code></a></div>"
        + (f"<ul class='notices'>{notices}</ul>" if notices else "") + plan
        + "<h2>Documents</h2>" + table(("File", "Document", "State", "Attempts"), rows)
        + failures)


def routes(c: Console) -> list[Route]:
    # The development flow's page script follows any section marked as its is.
    return flow_routes(c, path="/spec", title="Specification flow",
                       section_of=lambda: section(read(c.h)))


__all__ = ["routes", "section"]
