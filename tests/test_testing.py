"""rein.testing: one way to run a graph in a test, on the Harness with the scripted worker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from rein.core.states import RunStatus
from rein.store.base import Event
from rein.testing import TEST_ENV, run_graph, scripted_harness, start

# An hour's backoff between attempts: a test that waited for it would never end.
GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/testing", "title": "t",
    "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
    "nodes": {"a": {
        "title": "a", "description": "a.",
        "failure": {"retry": {"max_attempts": 3, "backoff": "fixed",
                              "initial_delay_seconds": 3600, "retry_on": ["tool_error"]}},
    }},
}
ANSWERS = {"nodes": {"a": [{"failure": "tool_error", "message": "not yet"},
                           {"outputs": {}}]}}


def _graph(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    return path


def _run(root: Path) -> tuple[RunStatus, list[tuple[str, str, str]]]:
    events: list[Event] = []
    with scripted_harness(root, answers=ANSWERS, events=events) as harness:
        outcome = run_graph(harness, _graph(root))
    return outcome.status, [(e.type, e.run_id, e.at) for e in events]


def test_a_run_repeats_exactly_and_does_not_wait_out_its_backoff(tmp_path: Path) -> None:
    first = _run(tmp_path / "one")
    second = _run(tmp_path / "two")
    assert first[0] is RunStatus.SUCCEEDED
    assert [t for t, _, _ in first[1]].count("attempt/started") == 2  # the hour not waited
    assert first == second  # the same ids and times, event for event


def test_a_node_the_answers_do_not_name_waits_for_a_worker(tmp_path: Path) -> None:
    with scripted_harness(tmp_path, answers={"nodes": {}}) as harness:
        assert run_graph(harness, _graph(tmp_path)).status is RunStatus.WAITING


def test_a_run_starts_inside_a_running_event_loop(tmp_path: Path) -> None:
    async def server() -> RunStatus:
        with scripted_harness(tmp_path, answers=ANSWERS) as harness:
            return (await start(harness, _graph(tmp_path))).status

    assert asyncio.run(server()) is RunStatus.SUCCEEDED


def test_commands_see_the_fixed_environment(tmp_path: Path) -> None:
    with scripted_harness(tmp_path) as harness:
        env: Any = harness.engine.env
        assert env == dict(TEST_ENV)


def test_a_test_gives_its_own_sleep_and_clock(tmp_path: Path) -> None:
    """A test that counts backoffs or moves time hands in its sleep and its clock; the run
    uses those, not the defaults."""
    from rein.engine.run.clock import StepClock

    delays: list[float] = []

    async def record(seconds: float) -> None:
        delays.append(seconds)

    clock = StepClock()
    with scripted_harness(tmp_path, answers=ANSWERS, sleep=record, clock=clock) as harness:
        assert run_graph(harness, _graph(tmp_path)).status is RunStatus.SUCCEEDED
        assert harness.engine.clock is clock
    assert len(delays) == 1 and delays[0] > 0  # the one backoff, recorded, not waited
