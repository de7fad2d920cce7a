"""Threads of the session runtime: the list, and a thread's conversation, live.

A thread's page is its turns as the feed gives them (:mod:`rein.protocol.transcript`, the
fold the app-server serves). It follows the last turn's run over the run page's own
event stream (``/runs/RUN/events``, ``Last-Event-ID`` resume): on each event the page asks
for that turn's section again, rendered here from the store, so a live page and a reloaded
one draw the same conversation. A second, slow stream (``/threads/THREAD/watch``) says when
the thread got a new turn or its turn got its run, and the page reloads onto it.

The questions of a turn are answered in the page through the console's Steering, bound to
the digest each card shows, exactly as the approval queue does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from rein.errors import ReinError
from rein.protocol import transcript
from rein.protocol.transcript import TurnView
from rein.protocol.turns import DECISIONS
from rein.web import pages_queue, streams, thread_items
from rein.web.auth import Denied
from rein.web.html import e, error_box, form, page, status, table

if TYPE_CHECKING:
    from rein.engine.service import ApprovalRow, ThreadRow
    from rein.web.console import Console

ANSWERS = ("accept", "acceptForSession", "decline", "cancel")


# -- the list ---------------------------------------------------------------------------


def _last_run(c: Console, row: ThreadRow) -> Any:
    """The last turn's run, how many turns, and whether the last turn ended without its
    run finishing (refused, or never started: its end is recorded, not its run's)."""
    turns = c.h.sessions.turns(row.thread_id)
    if not turns:
        return None, 0, False
    ended = c.h.sessions.end_of(turns[-1], write=not c.read_only) is not None
    run_id = c.h.sessions.run_of(turns[-1])
    return (c.h.find_run(run_id) if run_id else None), len(turns), ended


def thread_status(run: Any, turns: int, ended: bool = False) -> str:
    """How a thread reads in the list: new, active, waiting (on a person) or idle."""
    if ended:
        return "idle"
    if run is None:
        return "active" if turns else "new"
    if run.status.value in ("awaiting_human", "waiting"):
        return "waiting"
    return "idle" if run.status.terminal else "active"


def _activity(row: ThreadRow, run: Any) -> str:
    stamps = [row.updated_at] + ([run.finished_at or run.started_at] if run is not None else [])
    known = []
    for s in stamps:
        try:
            known.append((dt.datetime.fromisoformat(str(s)), str(s)))
        except ValueError:
            continue
    return max(known)[1][:19] if known else ""


def _sandbox(data: Mapping[str, Any]) -> str:
    box = data.get("sandbox")
    return str(box.get("type")) if isinstance(box, Mapping) else str(box or "")


def thread_rows(c: Console, rows: Sequence[ThreadRow]) -> list[list[str]]:
    out = []
    for row in rows:
        run, turns, ended = _last_run(c, row)
        d = row.data
        name = d.get("name") or d.get("preview") or row.thread_id
        out.append([(f"<a href='/threads/{e(row.thread_id)}'>{e(str(name)[:80])}</a>"
                    f"<div class='muted'><code>{e(row.thread_id)}</code></div>"),
                    status(thread_status(run, turns, ended)), f"<code>{e(d.get('cwd'))}</code>",
                    e(d.get("profile") or "default"), e(_sandbox(d)),
                    e(d.get("approvalPolicy")), str(turns), e(_activity(row, run))])
    return out


HEADERS = ("Thread", "Status", "Workspace", "Profile", "Sandbox", "Approval policy",
           "Turns", "Last activity")


async def threads(c: Console, request: Request) -> Response:
    archived = request.query_params.get("archived") == "1"
    rows = thread_rows(c, c.h.sessions.threads(archived=archived))
    other = ("<a href='/threads'>show the threads in use</a>" if archived else
             "<a href='/threads?archived=1'>show the archived threads</a>")
    body = (f"<h1>{'Archived threads' if archived else 'Threads'}</h1>"
            f"<p class='muted'>Conversations of the app-server and SDK runtime · {other}</p>"
            + table(HEADERS, rows, body_id="runs")
            + "<p class='muted'>Live: this list follows the store.</p>")
    query = "?archived=1" if archived else ""
    return HTMLResponse(page("Threads", body, read_only=c.read_only,
                             attrs={"data-runs-stream": f"/threads.stream{query}"}))


async def threads_stream(c: Console, request: Request) -> Response:
    archived = request.query_params.get("archived") == "1"

    def render() -> tuple[Any, str]:
        rows = thread_rows(c, c.h.sessions.threads(archived=archived))
        return rows, "".join("<tr>" + "".join(f"<td>{x}</td>" for x in r) + "</tr>"
                             for r in rows)

    return StreamingResponse(streams.runs_stream(render), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store"})


# -- one thread -------------------------------------------------------------------------


def _thread(c: Console, request: Request) -> ThreadRow | Response:
    try:
        return c.h.sessions.thread(request.path_params["thread_id"])
    except ReinError as exc:
        return not_found(c, exc)


def not_found(c: Console, exc: ReinError) -> Response:
    return HTMLResponse(page("Not found", error_box(exc.code, exc.message, exc.hint),
                             read_only=c.read_only), status_code=404)


def turn_section(thread_id: str, view: TurnView, *, csrf: str, read_only: bool,
                 entry: Callable[[str], ApprovalRow | None] | None = None) -> str:
    """One turn: its head (kind, status, run), its items in order, its open questions
    (``entry``: reads a question's queue entry, for a gate's fields)."""
    never = "no run yet" if view.status == "inProgress" else "no run"
    run = (f" · run <a href='/runs/{e(view.run_id)}'><code>{e(view.run_id)}</code></a>"
           if view.run_id else f" · <span class='muted'>{never}</span>")
    graph = (f" · graph <code>{e(view.graph)}</code>"
             if view.kind == "graph" and view.graph else "")
    used = (f" · {view.usage.get('totalTokens', 0)} tokens" if view.usage else "")
    steps = "".join(f"<li><code>{e(s.get('step'))}</code> {status(s.get('status'))}</li>"
                    for s in view.plan)
    # A failed turn says why; so does one interrupted before it had a run (THREAD008).
    said = view.status == "failed" or (view.status == "interrupted" and not view.run_id)
    error = f"<div class='error'>{e(view.error)}</div>" if view.error and said else ""
    asks = "".join(thread_items.question(
        thread_id, q, csrf=csrf, read_only=read_only,
        entry=entry(q.id) if entry is not None else None) for q in view.pending)
    # How the thread reads while this is its last turn (the page's title badge follows it).
    state = "waiting" if view.pending else "active" if view.status == "inProgress" else "idle"
    return (f"<section class='turn' data-turn='{e(view.turn_id)}' "
            f"data-turn-status='{e(view.status)}' data-thread-state='{state}' "
            f"data-last-seq='{view.last_seq}'>"
            f"<h2>Turn {view.seq} <span class='muted'>{e(view.kind)}{graph}{run}{used} · "
            f"{e(view.created_at[:19])}</span> {status(view.status)}</h2>"
            + (f"<ol class='steps'>{steps}</ol>" if steps else "")
            + "".join(thread_items.item(i) for i in view.items) + error + asks
            + "</section>")


def watch_key(c: Console, thread_id: str) -> str:
    """What the page was drawn for: each turn and its run (a new one means reload)."""
    turns = c.h.sessions.turns(thread_id)
    return " ".join(f"{t.turn_id}={c.h.sessions.run_of(t) or ''}" for t in turns)


def thread_page(c: Console, row: ThreadRow, views: Sequence[TurnView], *, csrf: str,
                error: tuple[str, str, str | None] | None = None) -> str:
    d = row.data
    last = views[-1] if views else None
    run, _, ended = _last_run(c, row)
    facts = [f"workspace <code>{e(d.get('cwd'))}</code>",
             f"profile {e(d.get('profile') or 'default')}", f"sandbox {e(_sandbox(d))}",
             f"approval policy {e(d.get('approvalPolicy'))}",
             f"created {e(row.created_at[:19])}"]
    if d.get("forkedFromId"):
        facts.append(f"forked from <a href='/threads/{e(d['forkedFromId'])}'>"
                     f"<code>{e(d['forkedFromId'])}</code></a>")
    if row.archived:
        facts.append("<b>archived</b>")
    turns = "".join(turn_section(row.thread_id, v, csrf=csrf, read_only=c.read_only,
                                 entry=c.h.find_approval) for v in views) \
        or "<p class='muted'>No turn yet.</p>"
    body = ((error_box(*error) if error else "")
            + f"<h1>{e(d.get('name') or d.get('preview') or row.thread_id)} "
            f"<span data-thread-status>{status(thread_status(run, len(views), ended))}"
            "</span></h1>"
            f"<div class='card'><code>{e(row.thread_id)}</code> · {' · '.join(facts)}</div>"
            f"<div class='conversation'>{turns}</div>"
            + _composer(c, row, not ended and run is not None and not run.status.terminal,
                        csrf))
    attrs = {"data-thread": row.thread_id, "data-watch": f"/threads/{row.thread_id}/watch",
             "data-watch-key": watch_key(c, row.thread_id)}
    # Followed while either says it goes on: a run that ended after the turn was read
    # still has its last events to send (the stream replays them, then ends).
    going = last is not None and (last.status == "inProgress" or run is None
                                  or not run.status.terminal)
    if last is not None and last.run_id and going:
        attrs.update({"data-thread-stream": f"/runs/{last.run_id}/events?after="
                      f"{last.last_seq}", "data-thread-turn": last.turn_id,
                      "data-last-seq": str(last.last_seq)})
    return page(str(d.get("name") or row.thread_id), body, read_only=c.read_only,
                attrs=attrs)


async def thread(c: Console, request: Request,
                 error: tuple[str, str, str | None] | None = None) -> Response:
    row = _thread(c, request)
    if isinstance(row, Response):
        return row
    views = transcript.turns(c.h, row.thread_id, write=not c.read_only)
    return HTMLResponse(thread_page(c, row, views, csrf=c.csrf(request), error=error),
                        status_code=409 if error else 200)


async def turn(c: Console, request: Request) -> Response:
    """One turn's section alone: what the page swaps in as its run's events arrive."""
    try:
        view = transcript.turn(c.h, request.path_params["thread_id"],
                               request.path_params["turn_id"], write=not c.read_only)
    except ReinError as exc:
        return not_found(c, exc)
    return HTMLResponse(turn_section(request.path_params["thread_id"], view,
                                     csrf=c.csrf(request), read_only=c.read_only,
                                     entry=c.h.find_approval),
                        headers={"Cache-Control": "no-store"})


async def watch(c: Console, request: Request) -> Response:
    row = _thread(c, request)
    if isinstance(row, Response):
        return row

    def render() -> tuple[Any, str]:
        key = watch_key(c, row.thread_id)
        return key, key

    return StreamingResponse(streams.runs_stream(render), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store"})


async def answer(c: Console, request: Request) -> Response:
    """Answer a question of this thread; the same Harness call as the approval queue's."""
    row = _thread(c, request)
    if isinstance(row, Response):
        return row
    form: dict[str, str] = request.state.form
    approval_id = request.path_params["approval_id"]
    action = form.get("action", "")
    if action not in ANSWERS:
        return c.denied(Denied(400, "WEB400", f"no answer {action!r}",
                               "answer with accept, acceptForSession, decline or cancel"))
    runs = {c.h.sessions.run_of(t) for t in c.h.sessions.turns(row.thread_id)}
    entry = c.h.find_approval(approval_id)
    if entry is None or entry.run_id not in runs:
        return c.denied(Denied(404, "WEB430", f"no question {approval_id[:80]!r} in thread "
                               f"{row.thread_id}", "answer it from the thread's page"))
    if action == "acceptForSession" and not _for_session(c, row, entry):
        return c.denied(Denied(400, "WEB432", f"question {approval_id[:80]!r} cannot be "
                               "accepted for the session",
                               "answer accept"))
    assert c.steering is not None
    try:
        await c.steering.answer(approval_id, DECISIONS[action], digest=form.get("digest", ""),
                                note=form.get("note"),
                                values=pages_queue.answer_values(form, entry.request),
                                session=request.state.sid)
        if action == "acceptForSession":  # after the answer held: remembered on the thread
            c.h.sessions.accept_for_session(row.thread_id,
                                            str(entry.request["action_digest"]))
    except ReinError as exc:
        return await thread(c, request, error=(exc.code, exc.message, exc.hint))
    return RedirectResponse(f"/threads/{row.thread_id}", status_code=303)


def _for_session(c: Console, row: ThreadRow, entry: ApprovalRow) -> bool:
    """Whether the pending question ``entry`` is one the protocol lets a person accept for
    the session (a command or a file change, with its exact action's digest)."""
    for view in transcript.turns(c.h, row.thread_id, write=not c.read_only):
        for request in view.pending:
            if request.id == entry.approval_id:
                return thread_items.for_session(request, entry)
    return False


MAX_TEXT = 32_000  # characters of a message typed into the page


async def start_turn(c: Console, request: Request) -> Response:
    """A conversation turn with the text typed in the page: recorded by the session runtime
    (THREAD001 busy, THREAD003 archived, THREAD004 empty), then its graph, rein's own and
    written from that text, started by the Steering approved as written, as a client's
    ``turn/start`` is its approval. The page then follows the turn's run."""
    row = _thread(c, request)
    if isinstance(row, Response):
        return row
    text = request.state.form.get("text", "").strip()[:MAX_TEXT]
    if row.data.get("approvalPolicy") == "never":
        return await thread(c, request, error=(
            "WEB431", (f"thread {row.thread_id} has the approval policy never: a turn started "
            "here would ask in the page what that policy declines"),
            "start its turns from the app-server or the SDK, which apply the policy"))
    from rein.formats.ags import validate_path

    sessions = c.h.sessions
    try:
        turn_run = await sessions.begin_turn(row.thread_id, [{"type": "text", "text": text}])
        # This process only records the turn; the Steering runs it. Left here, the record
        # would count the turn as in progress in this process forever.
        sessions.active.pop(row.thread_id, None)
        try:
            c.h.check_executor()  # refused before a run exists, as `rein run` does
            path = str(turn_run.row.input["graph"])
            digest = validate_path(path).digest
            assert c.steering is not None
            run_id = await c.steering.start(path, digest=str(digest), given={},
                                            session=request.state.sid)
        except ReinError as exc:
            turn_run.fail(exc)  # the turn ends failed, recorded, and says why
            raise
        except BaseException:
            turn_run.release()  # never started: the next look ends it interrupted
            raise
        turn_run.started(run_id)  # recorded on the turn, as a client's stream records it
    except ReinError as exc:
        return await thread(c, request, error=(exc.code, exc.message, exc.hint))
    return RedirectResponse(f"/threads/{row.thread_id}", status_code=303)


def _composer(c: Console, row: ThreadRow, busy: bool, csrf: str) -> str:
    """The form a person types the next turn into, where the page can start one; hidden
    while a turn is in progress, and shown by the page's script when it ends."""
    if c.read_only or row.archived or row.data.get("approvalPolicy") == "never":
        return ""
    return f"<div data-compose{' hidden' if busy else ''}>" + form(f"/threads/{row.thread_id}/turns", csrf,
                "<textarea name='text' rows='3' placeholder='Message the agent'></textarea>"
                "<br><button class='primary'>Send</button> <span class='muted'>a conversation "
                "turn under this thread's sandbox and approval policy</span>", cls="card compose") + "</div>"


def routes(c: Console) -> list[Route]:
    g = c.guarded

    def bind(handler: Callable[[Console, Request], Awaitable[Response]]
             ) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            return await handler(c, request)
        return run

    return [
        Route("/threads", g(bind(threads))),
        Route("/threads.stream", g(bind(threads_stream))),
        Route("/threads/{thread_id}", g(bind(thread))),
        Route("/threads/{thread_id}/watch", g(bind(watch))),
        Route("/threads/{thread_id}/turns/{turn_id}", g(bind(turn))),
        Route("/threads/{thread_id}/approvals/{approval_id}", g(bind(answer), changes=True),
              methods=["POST"]),
        Route("/threads/{thread_id}/turns", g(bind(start_turn), changes=True),
              methods=["POST"]),
    ]


__all__ = ["routes", "thread_page", "thread_status", "turn_section"]
