"""The driver's turns on every store: the same tests against SQLite and PostgreSQL.

The parametrized ``store_url``/``any_store`` fixtures are the store contract suite's own
(PostgreSQL runs when ``REIN_TEST_POSTGRES_URL`` names a server, and skips saying how to
start one otherwise).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import Refused, StoreError
from rein.store.base import RunRow
from rein.store.open import open_store
from rein.workers.driver.store import (
    Turn,
    TurnStatus,
    answer_turn,
    get_turn,
    put_turn,
    turns,
)
from tests.store.conftest import any_store, pg_url, store_url  # noqa: F401 - the fixtures

T0 = "2026-01-01T00:00:00Z"


def _run(store: Any, run_id: str = "run-1", parent: str | None = None) -> None:
    store.create_run(RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                            graph_digest="sha256-x=", status=RunStatus.WAITING, started_at=T0,
                            parent_run_id=None if parent is None else RunId(parent)),
                     event_type="run/started", payload={})


def _turn(token: str, *, run_id: str = "run-1", node: str = "a", attempt: int = 1,
          at: str = T0) -> Turn:
    return Turn(token=token, run_id=RunId(run_id), root_run_id=RunId("run-1"), node_key=node,
                attempt=attempt, kind="task", status=TurnStatus.PENDING,
                instruction={"token": token, "node": node, "brief": "é ✓"},
                baseline={"git": True, "head": "abc", "paths": {}}, created_at=at)


def _types(store: Any, run_id: str = "run-1") -> list[str]:
    return [e.type for e in store.events(RunId(run_id))]


def _answer(status: str = "done", **extra: Any) -> dict[str, Any]:
    return {"envelope": {"token": "t1", "status": status, **extra},
            "checks": {"writes_outside": []}}


def test_a_turn_is_issued_once_with_its_event(any_store: Any) -> None:  # noqa: F811
    _run(any_store)
    first = put_turn(any_store, _turn("t1"))
    again = put_turn(any_store, _turn("t1", at="2026-01-01T00:09:00Z"))  # asked again
    assert again == first
    assert _types(any_store) == ["run/started", "driver/instructed"]
    stored = get_turn(any_store, "t1")
    assert stored is not None and stored.instruction["brief"] == "é ✓"
    assert stored.status is TurnStatus.PENDING and stored.answer is None
    assert get_turn(any_store, "nope") is None


def test_turns_come_back_in_the_order_they_were_issued(any_store: Any) -> None:  # noqa: F811
    _run(any_store)
    _run(any_store, "run-1-child", parent="run-1")
    # Tokens and times that sort the other way round: the order is the order of issue.
    put_turn(any_store, _turn("t3", node="a", at="2026-01-01T00:00:03Z"))
    put_turn(any_store, _turn("t2", run_id="run-1-child", node="b",
                              at="2026-01-01T00:00:02Z"))
    put_turn(any_store, _turn("t1", node="c", at="2026-01-01T00:00:01Z"))
    assert [t.token for t in turns(any_store, "run-1")] == ["t3", "t2", "t1"]
    answer_turn(any_store, "t2", _answer(), T0)
    assert [t.token for t in turns(any_store, "run-1", status=TurnStatus.PENDING)] == \
        ["t3", "t1"]
    assert [t.token for t in turns(any_store, "run-1", status=TurnStatus.ANSWERED)] == ["t2"]
    assert _types(any_store, "run-1-child")[-1] == "driver/answered"
    assert turns(any_store, "run-2") == []


def test_an_envelope_is_consumed_with_its_event_or_not_at_all(
        any_store: Any) -> None:  # noqa: F811
    _run(any_store)
    put_turn(any_store, _turn("t1"))
    before = _types(any_store)
    with pytest.raises(RuntimeError), any_store.atomic():
        answer_turn(any_store, "t1", _answer(), T0)
        raise RuntimeError("the process dies before the commit")
    assert get_turn(any_store, "t1").status is TurnStatus.PENDING
    assert _types(any_store) == before
    turn, changed = answer_turn(any_store, "t1", _answer(), "2026-01-01T00:01:00Z")
    assert changed and turn.status is TurnStatus.ANSWERED
    stored = get_turn(any_store, "t1")
    assert stored == turn and stored.answered_at == "2026-01-01T00:01:00Z"
    [event] = any_store.events(RunId("run-1"), types=["driver/answered"])
    assert event.payload == {"token": "t1", "node": "a", "attempt": 1, "status": "done",
                             "writes_outside": []}


def test_a_replayed_envelope_is_applied_once_and_another_is_refused(
        any_store: Any) -> None:  # noqa: F811
    _run(any_store)
    put_turn(any_store, _turn("t1"))
    answer_turn(any_store, "t1", _answer(), T0)
    events = _types(any_store)
    # The checks are measured again on a replay and may differ: the envelope decides.
    replay = {**_answer(), "checks": {"writes_outside": ["x"]}}
    turn, changed = answer_turn(any_store, "t1", replay, "2026-01-01T00:05:00Z")
    assert not changed and turn.answer == _answer() and turn.answered_at == T0
    with pytest.raises(Refused) as refused:
        answer_turn(any_store, "t1", _answer("failed", message="other"), T0)
    assert refused.value.code == "DRIVER_ANSWERED"
    assert _types(any_store) == events
    assert get_turn(any_store, "t1").answer == _answer()
    with pytest.raises(StoreError) as missing:
        answer_turn(any_store, "t404", _answer(), T0)
    assert missing.value.code == "DRIVER404"


def test_concurrent_answers_apply_exactly_one(any_store: Any, store_url: str,  # noqa: F811
                                              tmp_path: Path) -> None:
    _run(any_store)
    put_turn(any_store, _turn("t1"))
    stores = [open_store(tmp_path, url=store_url) for _ in range(4)]
    start = threading.Barrier(len(stores))
    results: list[Any] = [None] * len(stores)

    def answer(i: int) -> None:
        start.wait()
        try:
            # Each writer sends its own envelope: one wins, the others are refused.
            results[i] = answer_turn(stores[i], "t1", _answer(message=f"writer {i}"), T0)[1]
        except Refused as exc:
            results[i] = exc.code

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    assert sorted(map(str, results)) == ["DRIVER_ANSWERED"] * 3 + ["True"]
    assert _types(any_store).count("driver/answered") == 1
    winner = results.index(True)
    assert get_turn(any_store, "t1").answer["envelope"]["message"] == f"writer {winner}"


def test_run_locked_sees_a_holder_in_another_process(any_store: Any, store_url: str,  # noqa: F811
                                                     tmp_path: Path) -> None:
    assert any_store.run_locked("run-x") is False
    with any_store.lock_run("run-x"):
        assert any_store.run_locked("run-x") is True  # held here
    assert any_store.run_locked("run-x") is False
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys; from pathlib import Path; from rein.store.open import open_store; "
          f"s = open_store(Path({str(tmp_path)!r}), url={store_url!r}); "
          "held = s.lock_run('run-x'); held.__enter__(); print('held', flush=True); "
          "sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert any_store.run_locked("run-x") is True
        assert any_store.run_locked("run-y") is False
        # Probing took nothing away from the holder.
        with pytest.raises(Refused), any_store.lock_run("run-x"):
            pass
    finally:
        holder.kill()
        holder.wait()
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None:
                pipe.close()
