"""Building an engine for tests: a fixed clock, counted ids, no backoff waits."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config import load_config
from rein.engine.clock import CounterIds, StepClock
from rein.engine.routing import Router
from rein.engine.runner import Engine, RunOutcome, prepare
from rein.store.base import Event
from rein.store.sqlite import SQLiteStore
from rein.workers.base import Worker

GRAPHS = Path(__file__).parent / "graphs"


async def no_wait(_: float) -> None:
    """Backoff without waiting (the delay is still computed and recorded)."""


def make_engine(workspace: Path, *, workers: tuple[Worker, ...] = (),
                env: Mapping[str, str] | None = None, router: Router | None = None,
                events: list[Event] | None = None) -> Engine:
    store = SQLiteStore.open(workspace)
    assert store is not None
    # The engine reads no rein.toml itself: the workspace's, as the Harness would pass it.
    engine = Engine(workspace=workspace, store=store, config=load_config(workspace),
                    workers=workers,
                    router=router or Router(routes={}), clock=StepClock(), ids=CounterIds(),
                    env=dict(env or {"PATH": "/usr/bin:/bin"}), sleep=no_wait)
    if events is not None:
        engine.listeners.append(events.append)
    return engine


def run_graph(engine: Engine, path: Path, params: Mapping[str, Any] | None = None
              ) -> RunOutcome:
    prepared = prepare(path, given=dict(params or {}), router=engine.router, env=engine.env)
    return asyncio.run(engine.start(prepared, approved=prepared.digest))
