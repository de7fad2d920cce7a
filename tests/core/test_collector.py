"""The collector's pause: nested, across threads, and back to how it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from rein.core import collector


@pytest.fixture(autouse=True)
def _enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_a_pause_stops_automatic_collections_and_ends_with_its_block() -> None:
    started: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        with collector.paused():
            assert not gc.isenabled()
            # Far more containers than a young generation holds: collections would start.
            kept = [{"i": [i]} for i in range(50_000)]
            during = len(started)
        assert during == 0
        assert gc.isenabled()
        more = [{"i": [i]} for i in range(50_000)]
        assert started != []  # the collector runs again after the pause
    finally:
        gc.callbacks.remove(seen)
    assert len(kept) == len(more)


def test_pauses_nest_and_the_collector_runs_again_after_the_last() -> None:
    with collector.paused():
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause is still open
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_of_two_threads_end_with_the_last() -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collector.paused():
            entered.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    with collector.paused():
        thread.start()
        assert entered.wait(10)
    assert not gc.isenabled()  # the other thread's pause outlives this one
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_settled_block_keeps_what_exists_and_what_a_pause_builds_out_of_the_passes() -> None:
    assert gc.get_freeze_count() == 0
    before = [{"i": [i]} for i in range(1000)]
    with collector.settled():
        frozen = gc.get_freeze_count()
        assert frozen >= len(before)  # alive as it began: out of the passes
        with collector.paused():
            built = [{"i": [i]} for i in range(1000)]
        assert gc.get_freeze_count() >= frozen + len(built)  # built in a pause: too
        with collector.settled():  # another run, at once
            pass
        assert gc.get_freeze_count() > 0  # the outer block still holds it
    assert gc.get_freeze_count() == 0  # all handed back: collected as ever
    assert len(before) == len(built)


def test_a_start_runs_no_pass_until_the_run_advances() -> None:
    started: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        with collector.starting():
            kept = [{"i": [i]} for i in range(50_000)]  # an import's worth of containers
            assert not gc.isenabled() and started == []
            collector.advancing()
            assert gc.isenabled()
            assert gc.get_freeze_count() >= len(kept)  # what the start built: out of passes
            more = [{"i": [i]} for i in range(50_000)]
            assert started != []
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0  # handed back to the passes as the block ends
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
    assert len(kept) == len(more)


def test_a_start_that_never_advances_ends_with_its_block() -> None:
    with collector.starting():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.unfreeze()


def test_a_run_that_advances_inside_a_pause_leaves_the_pause_to_end_it() -> None:
    with collector.starting():
        with collector.paused():
            collector.advancing()
            assert not gc.isenabled()  # the pause is still open
        assert gc.isenabled()
    assert gc.isenabled()
    gc.unfreeze()


def test_a_start_inside_a_pause_or_with_the_collector_off_changes_nothing() -> None:
    with collector.paused():
        with collector.starting():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collector.starting():
        collector.advancing()
    assert not gc.isenabled()
