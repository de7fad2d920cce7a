"""Quiet polling (rein.executors.polling): a worker's wake claims from a queue only
when the queue may hold work, and polls with the settings it registered."""

from __future__ import annotations

from typing import Any

import pytest

from rein.executors.polling import FALLBACK_SECONDS, QuietPolls, install


class QueueDouble:
    """Stands in for a DBOS Queue: the private fields DBOS's claim reads."""

    def __init__(self, name: str, worker_concurrency: int | None = 4,
                 concurrency: int | None = None, limiter: Any = None) -> None:
        self.name = name
        self._worker_concurrency = worker_concurrency
        self._concurrency = concurrency
        self._limiter = limiter
        self._partition_concurrency = None
        self._partition_limiter = None


class ClaimDouble:
    """Stands in for DBOS's claim: answers the next batch of ids, counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.answers: list[list[str]] = []

    def __call__(self, queue: Any, executor_id: str, app_version: str, key: Any,
                 running: int = 0, *rest: Any, **kw: Any) -> tuple[list[str], None]:
        self.calls += 1
        return (self.answers.pop(0) if self.answers else []), None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def poll(polls: QuietPolls, claim: ClaimDouble, queue: QueueDouble, running: int = 0) -> Any:
    return polls.start_queued_workflows(claim, queue, "w1", "v", None, running,
                                        owner_xid="x")


def test_an_idle_queue_is_not_claimed_from_until_something_is_enqueued() -> None:
    clock, claim, q = Clock(), ClaimDouble(), QueueDouble("rein")
    polls = QuietPolls(clock)
    polls.own(q)
    poll(polls, claim, q)  # the first look: work may have waited before the worker began
    assert claim.calls == 1
    for _ in range(40):  # forty wakes of an idle worker: no statement
        poll(polls, claim, q)
    assert claim.calls == 1 and polls.skipped == 40
    polls.heard("rein~other")  # another queue's notification does not wake this one
    poll(polls, claim, q)
    assert claim.calls == 1
    polls.heard("rein")
    claim.answers = [["a"]]
    assert poll(polls, claim, q) == (["a"], None)
    assert claim.calls == 2
    poll(polls, claim, q)  # it took one of four: the queue was drained
    assert claim.calls == 2


def test_a_claim_that_filled_every_slot_looks_again() -> None:
    clock, claim, q = Clock(), ClaimDouble(), QueueDouble("rein", worker_concurrency=4)
    polls = QuietPolls(clock)
    polls.own(q)
    claim.answers = [["a", "b", "c"], ["d"]]
    poll(polls, claim, q, running=1)  # three slots, three claimed: more may wait
    poll(polls, claim, q, running=3)  # a slot freed; the claim takes it
    assert claim.calls == 2
    poll(polls, claim, q, running=3)  # one of one claimed: look again
    assert claim.calls == 3
    poll(polls, claim, q, running=3)  # none of one: drained
    assert claim.calls == 3


def test_a_lost_notification_costs_at_most_the_fallback_wait() -> None:
    clock, claim, q = Clock(), ClaimDouble(), QueueDouble("rein")
    polls = QuietPolls(clock)
    polls.own(q)
    poll(polls, claim, q)
    clock.now += FALLBACK_SECONDS / 2
    poll(polls, claim, q)
    assert claim.calls == 1
    clock.now += FALLBACK_SECONDS
    poll(polls, claim, q)
    assert claim.calls == 2
    polls.heard(None)  # the listener reconnected: every queue looks once
    poll(polls, claim, q)
    assert claim.calls == 3


@pytest.mark.parametrize("shared", [{"concurrency": 8}, {"limiter": {"limit": 1,
                                                                      "period": 60}}])
def test_a_queue_with_a_shared_limit_is_claimed_from_at_every_wake(shared: Any) -> None:
    clock, claim, q = Clock(), ClaimDouble(), QueueDouble("rein", **shared)
    polls = QuietPolls(clock)
    polls.own(q)
    for _ in range(5):
        poll(polls, claim, q)
    assert claim.calls == 5


class SysDbDouble:
    """Stands in for DBOS's system database: the two methods wrapped, with DBOS's
    parameter names."""

    def __init__(self) -> None:
        self.reads = 0
        self.claims = 0
        self.versions: list[Any] = []  # is_latest_version, as each claim was given it

    def get_queue(self, name: str, *, client_system_database: Any = None) -> Any:
        self.reads += 1
        return QueueDouble(name, worker_concurrency=99)

    def start_queued_workflows(self, queue: Any, executor_id: str, app_version: str,
                               queue_partition_key: Any, local_running_count: int = 0,
                               partition_local_running_count: int = 0, *,
                               owner_xid: Any = None, is_latest_version: Any = None,
                               ) -> tuple[list[str], None]:
        self.claims += 1
        self.versions.append(is_latest_version)
        return [], None


def test_install_wraps_the_reload_and_the_claim_of_the_queues_it_owns() -> None:
    db, polls = SysDbDouble(), QuietPolls(Clock())
    assert install(db, polls) is None
    mine = QueueDouble("rein", worker_concurrency=4)
    polls.own(mine)
    assert db.get_queue("rein") is mine and db.reads == 0  # this worker's settings
    db.get_queue("someone-else")
    assert db.reads == 1
    for _ in range(10):
        db.start_queued_workflows(mine, "w1", "v", None, 0, owner_xid="x")
    assert db.claims == 1


def test_a_claim_from_an_owned_queue_skips_dbos_s_version_query() -> None:
    # None would make DBOS read the newest registered version in every claim (one more
    # statement) to decide on workflows enqueued without one, which rein never enqueues.
    db, polls = SysDbDouble(), QuietPolls(Clock())
    assert install(db, polls) is None
    mine = QueueDouble("rein", worker_concurrency=4)
    polls.own(mine)
    db.start_queued_workflows(mine, "w1", "v", None, 0, owner_xid="x",
                              is_latest_version=None)
    other = QueueDouble("someone-else", concurrency=2)  # not this worker's: as DBOS asks
    db.start_queued_workflows(other, "w1", "v", None, 0, owner_xid="y",
                              is_latest_version=None)
    assert db.versions == [False, None]


def test_install_leaves_a_dbos_of_another_shape_alone() -> None:
    class Other:
        def get_queue(self, name: str) -> None:
            return None

        def start_queued_workflows(self, queue: Any, limit: int) -> None:
            return None

    db = Other()
    why = install(db, QuietPolls())
    assert why is not None and "start_queued_workflows" in why
    assert db.start_queued_workflows.__name__ == "start_queued_workflows"


def test_the_installed_dbos_has_the_shape_the_wrapper_expects() -> None:
    pytest.importorskip("dbos")
    import functools
    import types

    from dbos._sys_db import SystemDatabase

    # The methods as an instance has them (bound), without building a database.
    db = types.SimpleNamespace(**{
        name: functools.partial(getattr(SystemDatabase, name), None)
        for name in ("get_queue", "start_queued_workflows")})
    assert install(db, QuietPolls()) is None


class SleepDouble:
    """Stands in for the queue thread's sleep: records each wait and lets the clock run."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def __call__(self, cond: Any, seconds: float) -> bool:
        self.waits.append(seconds)
        self.clock.now += seconds
        return False


def test_an_idle_queue_thread_sleeps_until_the_fallback_instead_of_waking_at_every_poll(
        ) -> None:
    clock, claim, q = Clock(), ClaimDouble(), QueueDouble("rein")
    sleep = SleepDouble(clock)
    polls = QuietPolls(clock, wait=sleep)
    polls.own(q)
    assert polls.get_queue(claim, "rein") is q and sleep.waits == []  # the first look
    poll(polls, claim, q)
    for _ in range(3):  # three rounds of DBOS's queue thread on an idle queue
        assert polls.get_queue(claim, "rein") is q
        poll(polls, claim, q)
    # one sleep of the whole fallback per round (at 20 ms polls: 50 wakes a second before)
    assert sleep.waits == [FALLBACK_SECONDS] * 3
    assert claim.calls == 4  # the first look and one fallback claim per round
    polls.heard("rein")  # something was enqueued: no sleep, the claim follows
    assert polls.get_queue(claim, "rein") is q and len(sleep.waits) == 3
    assert poll(polls, claim, q) == ([], None) and claim.calls == 5


def test_a_notification_wakes_a_sleeping_queue_thread() -> None:
    import threading
    import time

    clock, claim, q = Clock(), ClaimDouble(), QueueDouble("rein")  # time stands still
    polls = QuietPolls(clock)
    polls.own(q)
    poll(polls, claim, q)  # the first look; the queue is idle now
    got: list[Any] = []
    thread = threading.Thread(target=lambda: got.append(polls.get_queue(claim, "rein")))
    thread.start()
    for _ in range(500):  # until the thread sleeps (bounded looks)
        if polls.sleeps:
            break
        time.sleep(0.01)
    assert polls.sleeps >= 1 and got == []
    polls.heard("rein")
    thread.join(timeout=30)
    assert not thread.is_alive() and got == [q]


def test_a_queue_of_another_process_or_with_a_shared_limit_never_sleeps() -> None:
    clock = Clock()
    sleep = SleepDouble(clock)
    polls = QuietPolls(clock, wait=sleep)
    db = SysDbDouble()
    assert polls.get_queue(db.get_queue, "not-mine").name == "not-mine" and db.reads == 1
    shared = QueueDouble("rein", concurrency=8)
    polls.own(shared)
    for _ in range(5):
        polls.get_queue(db.get_queue, "rein")
        poll(polls, ClaimDouble(), shared)
    assert sleep.waits == []
