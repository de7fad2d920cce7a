"""The engine of a test Harness (``rein.testing``): a step clock, counted ids, no backoff
waits, the workspace's ``rein.toml``, as every test that runs a graph has it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.loops import run as run_loop
from rein.engine.run.routing import Router
from rein.engine.run.runner import Engine, RunOutcome, prepare
from rein.store.base import Event
from rein.testing import no_wait, scripted_harness
from rein.workers.base import Worker

__all__ = ["GRAPHS", "make_engine", "no_wait", "run_graph"]

GRAPHS = Path(__file__).parent / "graphs"


def make_engine(workspace: Path, *, workers: tuple[Worker, ...] = (),
                env: Mapping[str, str] | None = None, router: Router | None = None,
                events: list[Event] | None = None) -> Engine:
    """The engine of :func:`rein.testing.scripted_harness` on ``workspace``, for a test
    that reads or drives the engine below the Harness (its store, ``proceed``)."""
    return scripted_harness(workspace, workers=workers, env=env, events=events,
                            router=router).engine


def run_graph(engine: Engine, path: Path, params: Mapping[str, Any] | None = None
              ) -> RunOutcome:
    """Prepare ``path`` and start it approved as shown, as :func:`rein.testing.start`."""
    prepared = prepare(path, given=dict(params or {}), router=engine.router, env=engine.env)
    return run_loop(engine.start(prepared, approved=prepared.digest))
