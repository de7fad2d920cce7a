"""The console's routes: a Starlette app over one :class:`~rein.web.console.Console` (one
Harness for reads, one Steering for changes)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route

from rein.engine.service import Harness
from rein.web import pages_dev, pages_eval, pages_spec, pages_threads, pages_usage
from rein.web.auth import Guard
from rein.web.console import Console
from rein.web.steer import Steering


def create_app(harness: Harness, guard: Guard, steering: Steering | None) -> Starlette:
    """The console. ``steering`` None: nothing can be changed (``--read-only``)."""
    c = Console(harness, steering, guard)
    g = c.guarded
    routes = [
        Route("/", g(c.runs)),
        Route("/runs.stream", g(c.runs_stream)),
        Route("/runs/{run_id}", g(c.run)),
        Route("/runs/{run_id}/events", g(c.events)),
        Route("/runs/{run_id}/record", g(c.record)),
        Route("/runs/{run_id}/fragment", g(c.fragment)),
        Route("/runs/{run_id}/cancel", g(c.cancel, changes=True), methods=["POST"]),
        Route("/approvals", g(c.approvals)),
        Route("/approvals/{approval_id}", g(c.answer, changes=True), methods=["POST"]),
        Route("/plans", g(c.plans)),
        Route("/plan", g(c.plan)),
        Route("/plan/run", g(c.start, changes=True), methods=["POST"]),
        Route("/static/{name}", c.static),  # the package's own files: no session needed
        *pages_threads.routes(c),
        *pages_dev.routes(c),
        *pages_usage.routes(c),
        *pages_spec.routes(c),
        *pages_eval.routes(c),
    ]
    app = Starlette(routes=routes)
    app.state.console = c
    return app


__all__ = ["Console", "create_app"]
