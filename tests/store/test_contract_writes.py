"""What every store guarantees, continued: the writes that carry their own event (approval
answers, driver turns), publication on commit, reads by key and type, redaction, the lock
probe. SQLite and PostgreSQL run the same tests (see ``conftest.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus
from rein.errors import Refused, StoreError
from rein.formats.redaction import Secrets
from rein.store.base import (
    ApprovalRow,
    DriverTurn,
    Event,
    NodeRow,
    RunRow,
    ThreadRow,
    ThreadTurnRow,
    Transition,
)

T = "2026-01-01T00:00:00Z"
R1 = RunId("r1")


def _run(run_id: str = "r1") -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                  graph_digest="sha256-x=", status=RunStatus.RUNNING, started_at=T)


def _turn(token: str = "tok", **changes: Any) -> DriverTurn:
    fields: dict[str, Any] = {
        "token": token, "run_id": R1, "root_run_id": R1, "node_key": "a", "attempt": 1,
        "kind": "task", "status": TurnStatus.PENDING, "instruction": {"z": 1, "a": 2},
        "baseline": {}, "created_at": T, **changes}
    return DriverTurn(**fields)


def _pending(any_store: Any) -> ApprovalRow:
    ask = ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=R1, key="gate:g",
                      kind=ApprovalKind.GATE, status=ApprovalStatus.PENDING, digest="sha256:d",
                      request={"prompt": "ok?"}, created_at=T)
    any_store.transition(R1, "approval/requested", {"approval_id": "apv-1"}, T,
                         Transition(approval=ask))
    return ask


def test_an_answer_is_written_with_the_event_it_is_given(any_store: Any) -> None:
    any_store.create_run(_run(), event_type="run/started", payload={})
    _pending(any_store)
    row, changed = any_store.answer_approval(
        "apv-1", ApprovalStatus.DECLINED, {"actor": "ana"}, T, event_type="approval/answered",
        payload={"approval_id": "apv-1", "status": "declined"})
    assert changed and any_store.get_approval("apv-1") == row
    assert row.status is ApprovalStatus.DECLINED and row.answered_at == T
    last = any_store.events(R1)[-1]
    assert (last.type, last.payload) == ("approval/answered",
                                         {"approval_id": "apv-1", "status": "declined"})
    # The same answer again changes nothing and appends nothing.
    _, again = any_store.answer_approval("apv-1", ApprovalStatus.DECLINED, {}, T,
                                         event_type="approval/answered", payload={})
    assert not again and any_store.events(R1)[-1] == last
    assert any_store.get_approval("apv-9") is None


def test_driver_turns_are_inserted_once_and_answered_once(any_store: Any) -> None:
    any_store.create_run(_run(), event_type="run/started", payload={})
    first, inserted = any_store.add_driver_turn(_turn(), event_type="driver/instructed",
                                                payload={"token": "tok"})
    assert inserted and first.instruction == {"z": 1, "a": 2}
    assert list(any_store.driver_turn("tok").instruction) == ["z", "a"]  # order as built
    _, again = any_store.add_driver_turn(_turn(attempt=9), event_type="driver/instructed",
                                         payload={})
    assert not again and any_store.driver_turn("tok").attempt == 1
    any_store.add_driver_turn(_turn("tok2"), event_type="driver/instructed", payload={})
    assert [t.token for t in any_store.driver_turns("r1")] == ["tok", "tok2"]
    answer = {"envelope": {"status": "done"}, "checks": {}}
    turn, changed = any_store.answer_driver_turn("tok", answer, T, event_type="driver/answered",
                                                 payload={"token": "tok"})
    assert changed and turn.status is TurnStatus.ANSWERED and turn.answer == answer
    _, changed = any_store.answer_driver_turn("tok", answer, T, event_type="driver/answered",
                                              payload={})
    assert not changed  # the same envelope again
    with pytest.raises(Refused) as refused:
        any_store.answer_driver_turn("tok", {"envelope": {"status": "x"}}, T,
                                     event_type="driver/answered", payload={})
    assert refused.value.code == "DRIVER_ANSWERED"
    with pytest.raises(StoreError) as missing:
        any_store.answer_driver_turn("nope", answer, T, event_type="driver/answered",
                                     payload={})
    assert missing.value.code == "DRIVER404"
    assert [t.token for t in any_store.driver_turns("r1", status=TurnStatus.PENDING)] == [
        "tok2"]
    assert [e.type for e in any_store.events(R1)] == [
        "run/started", "driver/instructed", "driver/instructed", "driver/answered"]


def test_commit_hooks_get_what_committed_once_and_nothing_rolled_back(any_store: Any) -> None:
    seen: list[Sequence[Event]] = []
    remove = any_store.on_commit(seen.append)
    any_store.create_run(_run(), event_type="run/started", payload={})
    with any_store.atomic():
        any_store.transition(R1, "node/started", {"node": "a"}, T)
        any_store.transition(R1, "node/finished", {"node": "a"}, T)
        assert len(seen) == 1  # not before the group commits
    with pytest.raises(RuntimeError), any_store.atomic():
        any_store.transition(R1, "run/finished", {}, T)
        raise RuntimeError("rolled back")
    any_store.add_driver_turn(_turn(), event_type="driver/instructed", payload={})
    assert [[(e.seq, e.type) for e in events] for events in seen] == [
        [(1, "run/started")], [(2, "node/started"), (3, "node/finished")],
        [(4, "driver/instructed")]]
    assert [e.to_json() for events in seen for e in events] == [
        e.to_json() for e in any_store.events(R1)]
    remove()
    any_store.transition(R1, "run/finished", {}, T)
    assert len(seen) == 3


def test_the_events_one_step_finds_are_written_at_once_each_its_own(any_store: Any) -> None:
    """``append_all``: several events of one type in one transaction, each with its own seq,
    in order, redacted and published once the transaction commits, as one by one."""
    secret = "s3cr3t-value-that-is-long"
    any_store.know(Secrets.of({"TOKEN": secret}))
    seen: list[Sequence[Event]] = []
    any_store.on_commit(seen.append)
    any_store.create_run(_run(), event_type="run/started", payload={})
    assert any_store.append_all(R1, "edge/resolved", [], T) == []  # nothing found: nothing written
    written = any_store.append_all(R1, "edge/resolved", [
        {"from": "a", "to": "b"}, {"from": "a", "to": "c", "said": secret},
        {"from": "a", "to": "d"}], T)
    assert [(e.seq, e.payload.get("to")) for e in written] == [(2, "b"), (3, "c"), (4, "d")]
    assert [[e.seq for e in events] for events in seen] == [[1], [2, 3, 4]]
    stored = any_store.events(R1)
    assert [e.to_json() for e in stored[1:]] == [e.to_json() for e in written]
    assert secret not in str([e.payload for e in stored] + [e.payload for e in written])
    # Inside a group, with the group; a payload that cannot be stored takes none of them.
    with any_store.atomic():
        any_store.append_all(R1, "edge/resolved", [{"to": "e"}], T)
        any_store.transition(R1, "node/started", {"node": "e"}, T)
    with pytest.raises((TypeError, ValueError, StoreError)):
        any_store.append_all(R1, "edge/resolved", [{"to": "f"}, {"to": object()}], T)
    assert [(e.seq, e.type) for e in any_store.events(R1, after=4)] == [
        (5, "edge/resolved"), (6, "node/started")]
    assert [[e.seq for e in events] for events in seen][2:] == [[5, 6]]
    assert [e.seq for e in any_store.append_all(R1, "edge/resolved", [{"to": "g"}], T)] == [7]


def test_reads_by_key_and_by_type(any_store: Any) -> None:
    any_store.create_run(_run(), event_type="run/started", payload={})
    node = NodeRow(run_id=R1, node_key=NodeKey("loop[0].a"), node_id="a",
                   scope_path="loop[0]", type="task", status=NodeStatus.RUNNING)
    any_store.transition(R1, "node/started", {}, T, Transition(node=node))
    got = any_store.node(R1, "loop[0].a")
    assert (got.node_id, got.scope_path, got.status) == ("a", "loop[0]", NodeStatus.RUNNING)
    assert any_store.node(R1, "a") is None
    assert [e.type for e in any_store.events(R1, types=["node/started"])] == ["node/started"]
    assert any_store.events(R1, types=[]) == []


def test_every_write_redacts_what_the_store_knows(any_store: Any) -> None:
    secret = "s3cr3t-value-that-is-long"
    any_store.know(Secrets.of({"TOKEN": secret}))
    assert secret in any_store.secrets.values
    assert secret not in str(any_store.redact({"x": f"key {secret}"}))
    any_store.create_run(_run(), event_type="run/started", payload={"said": secret})
    turn, _ = any_store.add_driver_turn(_turn(instruction={"brief": secret}),
                                        event_type="driver/instructed", payload={})
    stored = [e.payload for e in any_store.events(R1)] + [turn.instruction]
    assert secret not in str(stored)
    assert secret not in str(any_store.driver_turn("tok").instruction)


def test_the_lock_probe_sees_this_process_holding_it(any_store: Any) -> None:
    assert any_store.url  # names the database: the key of its run locks and its subscribers
    assert not any_store.run_locked("r1")
    with any_store.lock_run("r1"):
        assert any_store.run_locked("r1")
    assert not any_store.run_locked("r1")


def test_threads_and_their_turns_round_trip(any_store: Any) -> None:
    row = ThreadRow(thread_id="thr-1", data={"cwd": "/w", "sandbox": {"type": "readOnly"}},
                    archived=False, created_at=T, updated_at=T)
    any_store.save_thread(row)
    any_store.save_thread(ThreadRow(thread_id="thr-0", data={}, archived=True,
                                    created_at="2025-01-01T00:00:00Z", updated_at=T))
    assert any_store.get_thread("thr-1") == row and any_store.get_thread("thr-9") is None
    renamed = ThreadRow(thread_id="thr-1", data={**row.data, "name": "n"}, archived=True,
                        created_at=T, updated_at="2026-01-02T00:00:00Z")
    any_store.save_thread(renamed)  # the same id replaces the settings, keeps created_at
    assert [t.thread_id for t in any_store.list_threads()] == ["thr-0", "thr-1"]
    assert any_store.get_thread("thr-1") == renamed
    for seq in (1, 2):
        any_store.add_thread_turn(ThreadTurnRow(thread_id="thr-1", seq=seq,
                                                turn_id=f"turn-{seq}", input={"n": seq},
                                                created_at=T))
    any_store.set_turn_run("turn-2", "run-2")
    turns = any_store.thread_turns("thr-1")
    assert [(t.seq, t.turn_id, t.run_id, dict(t.input)) for t in turns] == [
        (1, "turn-1", None, {"n": 1}), (2, "turn-2", "run-2", {"n": 2})]
    assert any_store.thread_turns("thr-0") == []


def test_the_shared_suite_calls_every_method_of_the_protocol() -> None:
    """A method the engine may use is a method every backend is tested on: a third backend
    passing this suite implements the whole protocol."""
    from pathlib import Path

    from rein.store.base import Store

    here = Path(__file__).parent
    text = "".join(p.read_text(encoding="utf-8") for p in (
        here / "test_contract.py", here / "test_contract_writes.py", here / "conftest.py",
        here / "test_contract_delete.py"))
    # Every role's methods (Store is their union).
    roles = [c for c in Store.__mro__ if c.__module__ == "rein.store.base"]
    assert len(roles) == 8  # Store and its seven roles
    methods = sorted({name for role in roles for name, value in vars(role).items()
                      if callable(value) and not name.startswith("_")})
    assert len(methods) > 30
    called = {m for m in methods if f"any_store.{m}(" in text or f"store.{m}()" in text}
    assert sorted(set(methods) - called) == []


def test_a_batch_is_one_commit_and_keeps_what_was_written_before_an_error(
        any_store: Any) -> None:
    seen: list[Sequence[Event]] = []
    any_store.on_commit(seen.append)
    any_store.create_run(_run(), event_type="run/started", payload={})
    with any_store.batch():
        pass  # nothing written: nothing committed, nothing published
    with any_store.batch():
        for n in range(3):
            any_store.transition(R1, "edge/resolved", {"n": n}, T)
        assert len(seen) == 1  # published after the one commit, not write by write
    with pytest.raises(RuntimeError), any_store.batch():
        any_store.transition(R1, "node/skipped", {}, T)
        raise RuntimeError("between writes: what came before it stays")
    assert [[(e.seq, e.type) for e in events] for events in seen] == [
        [(1, "run/started")],
        [(2, "edge/resolved"), (3, "edge/resolved"), (4, "edge/resolved")],
        [(5, "node/skipped")]]
    assert [e.seq for e in any_store.events(R1)] == [1, 2, 3, 4, 5]


def test_a_write_failing_inside_a_batch_rolls_the_batch_back(any_store: Any) -> None:
    any_store.create_run(_run(), event_type="run/started", payload={})
    first = ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=R1, key="gate:g",
                        kind=ApprovalKind.GATE, status=ApprovalStatus.PENDING, digest="d",
                        request={}, created_at=T)
    any_store.transition(R1, "approval/requested", {}, T, Transition(approval=first))
    clash = ApprovalRow(approval_id=ApprovalId("apv-2"), run_id=R1, key="gate:g",
                        kind=ApprovalKind.GATE, status=ApprovalStatus.PENDING, digest="d",
                        request={}, created_at=T)
    with pytest.raises(StoreError), any_store.batch():
        any_store.transition(R1, "edge/resolved", {}, T)
        try:  # its event is written, then its approval row breaks the unique key
            any_store.transition(R1, "approval/requested", {}, T, Transition(approval=clash))
        except StoreError:
            pass
        any_store.transition(R1, "edge/resolved", {}, T)  # refused: the batch is broken
    assert [e.type for e in any_store.events(R1)] == ["run/started", "approval/requested"]
    any_store.transition(R1, "run/finished", {}, T)  # the store goes on afterwards
    assert [e.seq for e in any_store.events(R1)] == [1, 2, 3]


def test_a_held_write_commits_with_the_next_one(any_store: Any, store_url: str,
                                                tmp_path: Any) -> None:
    from rein.store.open import open_store

    seen: list[Sequence[Event]] = []
    any_store.on_commit(seen.append)
    any_store.create_run(_run(), event_type="run/started", payload={})
    other = open_store(tmp_path, url=store_url)  # another connection: sees commits only
    try:
        any_store.transition(R1, "node/started", {}, T, hold=True)
        assert [e.type for e in any_store.events(R1)][-1] == "node/started"
        assert [e.type for e in other.events(R1)] == ["run/started"]
        any_store.transition(R1, "attempt/started", {}, T)
        assert [e.type for e in other.events(R1)] == [
            "run/started", "node/started", "attempt/started"]
        assert [[e.type for e in events] for events in seen][-1] == [
            "node/started", "attempt/started"]  # one commit
        any_store.transition(R1, "attempt/finished", {}, T, hold=True)
        any_store.flush()
        any_store.flush()  # nothing held: nothing to do
        assert other.events(R1)[-1].type == "attempt/finished"
        any_store.transition(R1, "attempt/note", {}, T, hold=True)
        any_store.flush_on_loop()  # as the loop's turn commits it: the same, when it fits
        assert other.events(R1)[-1].type == "attempt/note"
        any_store.transition(R1, "node/finished", {}, T, hold=True)
        with pytest.raises(RuntimeError), any_store.atomic():
            any_store.transition(R1, "run/finished", {}, T)
            raise RuntimeError("the group rolls back; the held write before it stays")
        assert other.events(R1)[-1].type == "node/finished"
        any_store.transition(R1, "diagnostic", {}, T, hold=True)
        any_store.close()  # closing commits it
        assert [e.seq for e in other.events(R1)] == [1, 2, 3, 4, 5, 6, 7]
    finally:
        other.close()


def test_a_held_write_goes_through_an_empty_batch_and_commits_with_a_full_one(
        any_store: Any, store_url: str, tmp_path: Any) -> None:
    from rein.store.open import open_store

    seen: list[Sequence[Event]] = []
    any_store.on_commit(seen.append)
    any_store.create_run(_run(), event_type="run/started", payload={})
    other = open_store(tmp_path, url=store_url)  # another connection: sees commits only
    try:
        any_store.transition(R1, "node/finished", {}, T, hold=True)
        with any_store.batch():
            pass  # a scheduling step that writes nothing: the write stays held
        with pytest.raises(RuntimeError), any_store.batch():
            raise RuntimeError("nothing written before it: still held")
        assert [e.type for e in other.events(R1)] == ["run/started"]
        any_store.transition(R1, "node/started", {}, T, hold=True)  # joins it
        any_store.transition(R1, "attempt/started", {}, T)
        assert [[e.type for e in events] for events in seen][-1] == [
            "node/finished", "node/started", "attempt/started"]  # one commit
        # A node's end and the edges it resolves: one commit.
        any_store.transition(R1, "node/finished", {"n": 1}, T, hold=True)
        with any_store.batch():
            any_store.transition(R1, "edge/resolved", {"to": "b"}, T)
            any_store.transition(R1, "edge/resolved", {"to": "c"}, T)
        assert [[e.type for e in events] for events in seen][-1] == [
            "node/finished", "edge/resolved", "edge/resolved"]
        assert other.events(R1)[-1].payload == {"to": "c"}
        # A batch whose write fails part-way takes the held write with it: the store
        # writes nothing more, as when a held write's commit fails.
        clash = ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=R1, key="gate:g",
                            kind=ApprovalKind.GATE, status=ApprovalStatus.PENDING,
                            digest="d", request={}, created_at=T)
        any_store.transition(R1, "approval/requested", {}, T, Transition(approval=clash))
        any_store.transition(R1, "node/finished", {"n": 2}, T, hold=True)
        with pytest.raises(StoreError), any_store.batch():
            any_store.transition(R1, "edge/resolved", {}, T)
            any_store.transition(R1, "approval/requested", {}, T,
                                 Transition(approval=clash.replace(
                                     approval_id=ApprovalId("apv-2"))))
        assert [e.type for e in other.events(R1)][-1] == "approval/requested"
        assert [[e.type for e in events] for events in seen][-1] == ["approval/requested"]
        with pytest.raises(StoreError, match="an earlier commit failed"):
            any_store.transition(R1, "diagnostic", {}, T)
    finally:
        other.close()


def test_another_connections_commit_changes_the_signal(any_store: Any, store_url: str,
                                                       tmp_path: Any) -> None:
    """What a follower of the event log waits on: a commit made through another connection
    (another process, or another store object) changes :meth:`changes`, and reading it
    touches no table."""
    import time

    from rein.store.open import open_store

    before = any_store.changes()
    assert isinstance(before, int)
    other = open_store(tmp_path, url=store_url)
    try:
        other.create_run(_run("r2"), event_type="run/started", payload={})
    finally:
        other.close()
    for _ in range(500):  # PostgreSQL delivers the notification after the commit
        if any_store.changes() != before:
            break
        time.sleep(0.01)
    assert any_store.changes() != before


def test_held_writes_commit_before_one_transaction_grows_past_a_bound(
        any_store: Any, store_url: str, tmp_path: Any) -> None:
    """Writes that follow one another without the event loop turning (a map whose items
    call no worker) do not all wait in one transaction, in memory."""
    from rein.store.open import open_store
    from rein.store.sql.connection import HELD_MAX

    any_store.create_run(_run(), event_type="run/started", payload={})
    other = open_store(tmp_path, url=store_url)  # another connection: sees commits only
    try:
        for i in range(2 * HELD_MAX - 10):
            any_store.transition(R1, "node/finished", {"i": i}, T, hold=True)
        seen = len(other.events(R1))
        assert HELD_MAX <= seen < 2 * HELD_MAX - 9, seen  # the first ones, not the last
        any_store.flush_soon()  # no event loop runs here: committed now
        assert len(other.events(R1)) == 2 * HELD_MAX - 9
    finally:
        other.close()
