"""Running a graph in tests: one Harness, a scripted worker, a clock and ids that repeat.

A test of a graph (rein's own, or a project's) opens a :class:`rein.Harness` the way every
surface does, with what makes it repeat exactly: a step clock (each reading one second
later), counted ids, backoff delays computed and recorded but not waited, a fixed ``PATH``,
and the scripted worker (:class:`rein.workers.scripted.ScriptedWorker`, a named test double)
answering from a mapping in place of a model::

    from rein.testing import run_graph, scripted_harness

    def test_release_waits_for_a_person(tmp_path):
        with scripted_harness(tmp_path, answers={"nodes": {"draft": [{"outputs": {"x": 1}}]}}) as h:
            outcome = run_graph(h, tmp_path / "release.agraph.yaml")
            assert outcome.status.value == "awaiting_human"

:func:`start` is the same inside a running event loop (a server's test). A node the answers
do not name is not served, so the run waits for a worker, as it would in production.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.loops import run as run_loop
from rein.engine.run.clock import Clock, CounterIds, StepClock
from rein.engine.service import Harness
from rein.workers.scripted import ScriptedWorker

if TYPE_CHECKING:
    from rein.config import Config
    from rein.engine.run.outcome import RunOutcome
    from rein.engine.run.routing import Router
    from rein.store.base import Event

__all__ = ["TEST_ENV", "no_wait", "run_graph", "scripted_harness", "start"]

TEST_ENV: Mapping[str, str] = {"PATH": "/usr/bin:/bin"}
"""The environment a test run's commands see unless the test gives one: no user's ``PATH``."""


async def no_wait(_: float) -> None:
    """Backoff without waiting: the delay is still computed and recorded."""


def scripted_harness(workspace: str | Path, *, answers: Mapping[str, Any] | None = None,
                 workers: Iterable[Any] = (), config: Config | None = None,
                 env: Mapping[str, str] | None = None,
                 events: list[Event] | None = None, clock: Clock | None = None,
                 sleep: Callable[[float], Awaitable[None]] = no_wait,
                 router: Router | None = None,
                 checkers: Mapping[str, Any] | None = None) -> Harness:
    """A Harness on ``workspace`` for a test.

    ``answers``: the scripted worker's script (``nodes`` and ``judges``, as in an answers
    file), served before ``workers``; ``config``: the merged settings (the workspace's
    ``rein.toml`` when not given); ``env``: what commands see (:data:`TEST_ENV` when not
    given); ``events``: a list every committed event is appended to, in order. A test that
    moves time or counts backoffs gives its own ``clock`` (a :class:`StepClock` when not
    given) or ``sleep`` (:func:`no_wait` when not given); ``router``: tier routing (built
    from the settings' ``[tiers]`` when not given); ``checkers``: the external criteria's
    checkers (the ``rein.checkers`` entry points when not given).
    """
    from rein.config import load_config

    root = Path(workspace).resolve()
    scripted = () if answers is None else (ScriptedWorker(answers),)
    return Harness(workspace=root, config=config if config is not None else load_config(root),
                   clock=clock or StepClock(), ids=CounterIds(), env=dict(env or TEST_ENV),
                   workers=(*scripted, *workers), sleep=sleep, router=router,
                   checkers=checkers, listeners=() if events is None else (events.append,))


async def start(harness: Harness, path: str | Path,
                params: Mapping[str, Any] | None = None) -> RunOutcome:
    """Prepare ``path`` with ``params`` and start it approved as shown (its own digest),
    to its end or first wait."""
    prepared = await harness.prepare(path, given=dict(params or {}))
    return await harness.start(prepared, approved=prepared.digest)


def run_graph(harness: Harness, path: str | Path,
              params: Mapping[str, Any] | None = None) -> RunOutcome:
    """:func:`start` from a test with no event loop of its own."""
    return run_loop(start(harness, path, params))
