"""The console's state and its own handlers: one Harness (reads) and one Steering (changes).

Every request passes :class:`rein.web.auth.Guard` first (host, session; for a POST also
origin, CSRF, read-only and the body limit). Handlers read through the Harness and render;
the three that change state (approve and run, answer, cancel) hand one Harness call to the
Steering thread and redirect to the page that shows its effect. The pages of threads, of
the development flow and of evaluations take the :class:`Console`; :mod:`rein.web.app`
puts every route together.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib.resources import files
from typing import Any

from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from rein.core import states
from rein.engine.service import Harness
from rein.errors import ReinError
from rein.web import pages_queue, pages_runs, review, streams
from rein.web.auth import MAX_BODY, Denied, Guard, parse_form
from rein.web.html import error_box, page
from rein.web.paths import inside
from rein.web.steer import Steering

Handler = Callable[[Request], Awaitable[Response]]
STATIC = {"console.css": "text/css", "console.js": "text/javascript"}
ANSWERS = states.ANSWERS  # the one vocabulary of answers


class Console:
    """The state of one server: its Harness, its Steering thread and its Guard."""

    def __init__(self, harness: Harness, steering: Steering | None, guard: Guard) -> None:
        self.h, self.steering, self.guard = harness, steering, guard
        # Every tab follows the event log through the Harness (one read per change for all
        # of them), woken at once by the Steering lanes' commits.
        self._runs_cache: dict[str, tuple[int, Any, str]] = {}
        if steering is not None:
            steering.heard.append(harness.wake)

    # -- the guard ------------------------------------------------------------------------

    def guarded(self, handler: Handler, *, changes: bool = False) -> Handler:
        async def run(request: Request) -> Response:
            try:
                self.guard.check_host(request.headers.get("host"))
                token = request.query_params.get("token")
                if token is not None and request.method == "GET":
                    return self._exchange(request, token)
                sid = self.guard.session(request.cookies.get(self.guard.cookie))
                request.state.sid = sid
                if changes:
                    form = parse_form(await _body(request))
                    self.guard.check_change(sid=sid, origin=request.headers.get("origin"),
                                            referer=request.headers.get("referer"),
                                            host=request.headers.get("host", ""), form=form)
                    if self.steering is None:
                        raise Denied(403, "WEB403", "the console is read-only",
                                     "restart `rein serve` without --read-only")
                    request.state.form = form
                return await handler(request)
            except Denied as exc:
                return self.denied(exc)
        return run

    def _exchange(self, request: Request, token: str) -> Response:
        sid = self.guard.exchange(token)
        # The token leaves the address bar (and the history) by this redirect.
        query = "&".join(f"{k}={v}" for k, v in request.query_params.items() if k != "token")
        target = request.url.path + (f"?{query}" if query else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(self.guard.cookie, sid, httponly=True, samesite="strict", path="/")
        return response

    def denied(self, exc: Denied) -> Response:
        body = page(exc.code, error_box(exc.code, exc.message, exc.hint),
                    read_only=self.guard.read_only)
        return HTMLResponse(body, status_code=exc.status)

    def csrf(self, request: Request) -> str:
        return self.guard.csrf(request.state.sid)

    @property
    def read_only(self) -> bool:
        return self.guard.read_only or self.steering is None

    # -- pages ----------------------------------------------------------------------------

    async def runs(self, request: Request) -> Response:
        params = dict(request.query_params)
        try:
            q = pages_runs.query(params)
        except Denied as exc:
            return HTMLResponse(pages_runs.runs_page(
                self.h, None, now=streams.now(), read_only=self.read_only, typed=params,
                error=(exc.code, exc.message, exc.hint)), status_code=exc.status)
        return HTMLResponse(pages_runs.runs_page(self.h, q, now=streams.now(),
                                                 read_only=self.read_only))

    async def runs_stream(self, request: Request) -> Response:
        try:
            q = pages_runs.query(dict(request.query_params))
        except Denied as exc:
            return self.denied(exc)
        seen = self.h.changes_seen

        def render() -> tuple[Any, str]:
            # Every tab with the same filter shares one render per change the watcher saw.
            key = q.url("")
            cached = self._runs_cache.get(key)
            if cached is not None and cached[0] == self.h.changes_seen:
                return cached[1], cached[2]
            version = self.h.changes_seen
            runs, _ = pages_runs.filtered(self.h, q)
            fingerprint = [(r.run_id, r.status.value, r.finished_at) for r in runs]
            rows = pages_runs.run_rows(self.h, runs, streams.now())
            html = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
                           for r in rows)
            if len(self._runs_cache) > 64:  # filters typed by hand: keep a few
                self._runs_cache.clear()
            self._runs_cache[key] = (version, fingerprint, html)
            return fingerprint, html

        async def wait() -> None:
            nonlocal seen
            seen = await self.h.next_change(seen, streams.RUNS_REFRESH_SECONDS)

        return StreamingResponse(streams.runs_stream(render, wait=wait),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    async def run(self, request: Request,
                  error: tuple[str, str, str | None] | None = None) -> Response:
        run = self._run(request)
        if isinstance(run, Response):
            return run
        if not self.read_only:
            # As on the approval queue: what is due times out before its card is shown.
            await self.h.expire_due()
        scope = request.query_params.get("scope", "")
        return HTMLResponse(pages_runs.run_page(self.h, run, scope=scope, now=streams.now(),
                                                csrf=self.csrf(request),
                                                read_only=self.read_only, error=error),
                            status_code=409 if error else 200)

    async def events(self, request: Request) -> Response:
        run = self._run(request)
        if isinstance(run, Response):
            return run
        after = streams.resume_point(request.headers.get("last-event-id"),
                                     request.query_params.get("after"))
        return StreamingResponse(streams.run_stream(self.h, run.run_id, after),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store",
                                          "X-Accel-Buffering": "no"})

    async def fragment(self, request: Request) -> Response:
        run = self._run(request)
        if isinstance(run, Response):
            return run
        q = request.query_params
        keys = [k for k in q.get("keys", "").split(",") if k]
        after = q.get("after", "0")
        body = pages_runs.fragment(self.h, run, scope=q.get("scope", ""), keys=keys,
                                   picture=q.get("svg") == "1",
                                   after=int(after) if after.isdigit() else 0,
                                   approvals=q.get("approvals") == "1",
                                   csrf=self.csrf(request), read_only=self.read_only)
        return Response(json.dumps(body, ensure_ascii=False), media_type="application/json",
                        headers={"Cache-Control": "no-store"})

    async def record(self, request: Request) -> Response:
        run = self._run(request)
        if isinstance(run, Response):
            return run
        text = json.dumps(self.h.record(run.run_id), indent=2, ensure_ascii=False)
        return Response(text + "\n", media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="{run.run_id}.run.json"'})

    def _run(self, request: Request, run_id: str | None = None) -> Any:
        try:
            return self.h.run(run_id or request.path_params["run_id"])
        except ReinError as exc:
            return HTMLResponse(pages_runs.not_found(exc.code, exc.message, exc.hint or "",
                                                     read_only=self.read_only),
                                status_code=404)

    async def approvals(self, request: Request,
                        error: tuple[str, str, str | None] | None = None) -> Response:
        run_id = request.query_params.get("run", "")
        if not self.read_only:
            # Timing out what is due is a write: a read-only console only shows the queue.
            await self.h.expire_due()
        rows = self.h.approvals(run_id=run_id or None)
        return HTMLResponse(pages_queue.approvals_page(
            rows, csrf=self.csrf(request), read_only=self.read_only, error=error,
            run_id=run_id, workspace=self.h.workspace, secrets=review.secrets_of(self.h)),
            status_code=409 if error else 200)

    async def answer(self, request: Request) -> Response:
        form: dict[str, str] = request.state.form
        approval_id = request.path_params["approval_id"]
        action = form.get("action", "")
        if action not in ANSWERS:
            return self.denied(Denied(400, "WEB400", f"no answer {action!r}",
                                      "answer with accept, decline or cancel"))
        row = self.h.find_approval(approval_id)
        back = _back(form.get("back", ""), row, self.h)
        values = pages_queue.answer_values(form, row.request if row is not None else {})
        assert self.steering is not None
        try:
            await self.steering.answer(approval_id, ANSWERS[action], digest=form.get("digest", ""),
                                       note=form.get("note"), values=values,
                                       run_id=None if row is None else
                                       self.h.owner(row.run_id),
                                       session=request.state.sid)
        except ReinError as exc:
            if back is not None:  # refused where it was given: on the run's page
                request.path_params["run_id"] = back
                return await self.run(request, error=(exc.code, exc.message, exc.hint))
            return await self.approvals(request, error=(exc.code, exc.message, exc.hint))
        target = (f"/runs/{back}" if back is not None else
                  f"/runs/{row.run_id}" if row is not None else "/approvals")
        return RedirectResponse(target, status_code=303)

    async def cancel(self, request: Request) -> Response:
        run = self._run(request)
        if isinstance(run, Response):
            return run
        assert self.steering is not None
        try:
            await self.steering.cancel(run.run_id, top=self.h.owner(run.run_id))
        except ReinError as exc:
            return self.denied(Denied(409, exc.code, exc.message, exc.hint or ""))
        return RedirectResponse(f"/runs/{run.run_id}", status_code=303)

    async def plans(self, request: Request) -> Response:
        return HTMLResponse(pages_queue.plans_page(self.h.workspace, read_only=self.read_only))

    async def plan(self, request: Request,
                   errors: Sequence[tuple[str, str, str | None]] = ()) -> Response:
        form = getattr(request.state, "form", {})
        given = request.query_params.get("path") or form.get("path", "")
        path = inside(self.h.workspace, given)  # Denied for anything outside the workspace
        from rein.formats.ags import validate_path
        from rein.formats.ags.plan import build_plan

        report = validate_path(str(self.h.workspace / path), limits=self.h.config.limits)
        if report.errors or report.document is None or report.digest is None:
            body = "".join(error_box(f.code, f.message, None) for f in report.errors)
            return HTMLResponse(page(f"Plan {path}", f"<h1>{path}</h1>{body}",
                                     read_only=self.read_only), status_code=422)
        plan = build_plan(report.document.data, source=path, digest=report.digest,
                          key_variables=self.h.key_variables())
        params = report.document.data.get("params")
        return HTMLResponse(pages_queue.plan_page(
            path, plan, report.digest, report.findings, csrf=self.csrf(request),
            read_only=self.read_only, errors=errors,
            params=params if isinstance(params, Mapping) else None,
            values=_params(form)), status_code=409 if errors else 200)

    async def start(self, request: Request) -> Response:
        form: dict[str, str] = request.state.form
        path = inside(self.h.workspace, form.get("path", ""))
        assert self.steering is not None
        # Typed text, as `rein run --param NAME=VALUE` gives it: the same binding coerces it
        # to the declared type and refuses what does not fit (AG301, AG302), all at once.
        given = _params(form)
        try:
            run_id = await self.steering.start(path, digest=form.get("digest", ""),
                                               given=given, raw=frozenset(given),
                                               session=request.state.sid)
        except ReinError as exc:
            found = getattr(exc, "findings", None) or ()
            errors = [(f.code, f.message, f.hint) for f in found] or [
                (exc.code, exc.message, exc.hint)]
            return await self.plan(request, errors=errors)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("not found", status_code=404)
        text = files("rein.web").joinpath("static", name).read_text(encoding="utf-8")
        return Response(text, media_type=STATIC[name],
                        headers={"Cache-Control": "no-cache"})


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise Denied(413, "WEB413", f"the request body is larger than {MAX_BODY} bytes",
                     "send a smaller form")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:  # a chunked body has no length to check up front
            raise Denied(413, "WEB413", f"the request body is larger than {MAX_BODY} bytes",
                         "send a smaller form")
        chunks.append(chunk)
    return b"".join(chunks)


def _back(given: str, row: Any, h: Harness) -> str | None:
    """The run whose page a card was answered on (its ``back`` field): only a page of the
    question's own run or of a run above it, never an address the form names freely."""
    if row is None or not given.startswith("/runs/"):
        return None
    wanted = given[len("/runs/"):]
    run_id: str | None = row.run_id
    while run_id is not None:
        if run_id == wanted:
            return run_id
        run_id = h.run(run_id).parent_run_id
    return None


def _params(form: Mapping[str, str]) -> dict[str, str]:
    """``param.NAME`` fields of the plan form; an empty one is left out (its default). A
    browser sends a textarea's line breaks as CRLF whatever they were typed as: they are
    read back as the newlines the field showed, so a value round-trips exactly."""
    return {k[len("param."):]: v.replace("\r\n", "\n") for k, v in form.items()
            if k.startswith("param.") and v != ""}


__all__ = ["ANSWERS", "Console", "Handler"]
