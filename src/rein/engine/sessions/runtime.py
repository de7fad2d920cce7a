"""The session runtime: threads, turns and their feeds, behind :class:`rein.Harness`.

Every surface that speaks threads (the app-server, the SDK, later ACP and the web console)
goes through :class:`Sessions` (``harness.sessions``); none decides a state change. A turn
is one run of the engine (:mod:`rein.engine.sessions.conversation` for a conversation turn,
the named graph for a graph turn), so it is durable, resumable from another process, and
its approvals are entries of the one approval queue: answering one from the CLI resolves
the server request on the wire too, since every feed is folded from the stored events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.states import ApprovalStatus
from rein.engine import events
from rein.engine.clock import RandomIds
from rein.engine.sessions import conversation, digest, ends, graph_turns, threads
from rein.engine.sessions.feed import Feed, Message, ServerRequest
from rein.engine.sessions.turn import DECISIONS, WORDS, TurnRun
from rein.errors import ConfigError, Refused
from rein.store.base import Event, ThreadRow, ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.service import Harness

class Sessions:
    """Threads and turns over one :class:`Harness` (``harness.sessions``)."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self._ids = RandomIds()
        self._runs: dict[str, asyncio.Future[str]] = {}  # graph id → the run it started
        self.active: dict[str, TurnRun] = {}  # thread → its turn in progress here
        harness.listeners.append(self._heard)

    def _heard(self, event: Event) -> None:
        # The engine creates the run inside `start`; a turn learns its run id from here.
        if event.type == "run/started" and not event.payload.get("parent_run_id"):
            waiting = self._runs.get(str(event.payload.get("graph_id")))
            if waiting is not None and not waiting.done():
                waiting.set_result(str(event.run_id))

    def _now(self) -> str:
        return self.harness.clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    # -- threads -------------------------------------------------------------------------

    def start_thread(self, *, cwd: str | None = None, profile: str | None = None,
                     sandbox: Any = None, approval_policy: Any = None,
                     name: str | None = None, ephemeral: bool = False) -> ThreadRow:
        """A new thread (THREAD002 for a sandbox or approval policy rein does not know)."""
        tier = (self.harness.config.get("tiers") or {}).get("standard") or {}
        row = threads.new_thread(self._ids.new("thr"), workspace=self.harness.workspace,
                                 now=self._now(), cwd=cwd, profile=profile, sandbox=sandbox,
                                 approval_policy=approval_policy, name=name,
                                 ephemeral=ephemeral, model=str(tier.get("model") or ""),
                                 provider=str(tier.get("provider") or "rein"))
        self.harness.store.save_thread(row)
        return row

    def thread(self, thread_id: str) -> ThreadRow:
        return threads.get(self.harness.store, thread_id)

    def threads(self, *, archived: bool = False) -> list[ThreadRow]:
        """The threads (archived ones only with ``archived``), newest first."""
        rows = [r for r in self.harness.store.list_threads() if r.archived == archived]
        return sorted(rows, key=lambda r: r.created_at, reverse=True)

    def update(self, thread_id: str, *, archived: bool | None = None, **data: Any
               ) -> ThreadRow:
        """Rename, archive or unarchive a thread (recorded; its turns are untouched)."""
        row = threads.changed(self.thread(thread_id), self._now(), archived=archived, **data)
        self.harness.store.save_thread(row)
        return row

    def accepted_for_session(self, thread_id: str) -> frozenset[str]:
        """The action digests answered ``acceptForSession`` in this thread (kept on it)."""
        return frozenset(self.thread(thread_id).data.get("acceptedForSession") or ())

    def accept_for_session(self, thread_id: str, action: str) -> None:
        """Remember ``action`` (an exact action's digest) as accepted for the thread. It
        answers only a question rein asks: what rein.toml or the profile refuses is never
        asked, so this can never widen what they allow."""
        known = self.accepted_for_session(thread_id)
        if action not in known:
            self.update(thread_id, acceptedForSession=sorted(known | {action}))

    def fork(self, thread_id: str) -> ThreadRow:
        """A new thread with the same history and settings; the original is untouched."""
        store = self.harness.store
        return threads.fork(store, self.thread(thread_id), self._ids.new("thr"), self._now(),
                            lambda: self._ids.new("turn"), self._run_of)

    def feeds(self, thread_id: str) -> list[Feed]:
        """Each turn of the thread folded from the store: the same in every process."""
        return [feed for feed, _ in self._folded(thread_id)]

    def replay(self, thread_id: str) -> list[Message]:
        """Every notification the thread's turns gave, in order, folded again from the
        store (an ACP ``session/load`` replays them); questions are not asked again."""
        return [m for _, messages in self._folded(thread_id) for m in messages
                if not isinstance(m, ServerRequest)]

    def _folded(self, thread_id: str) -> list[tuple[Feed, list[Message]]]:
        row = self.thread(thread_id)
        out = []
        for turn in self.harness.store.thread_turns(thread_id):
            feed = self._feed(row, turn)
            messages: list[Message] = []
            ended = self.end_of(turn)
            run_id = turn.run_id or self._run_of(turn)
            if feed.graph is not None:
                messages += self._before_run(feed, turn, ran=run_id is not None)
            if run_id is not None:
                for event in self.harness.store.events(run_id):  # type: ignore[arg-type]
                    messages += feed.apply(event)
            if ended is not None:  # after what its run recorded, if it began
                messages += feed.apply(ended)
            out.append((feed, messages))
        return out

    def end_of(self, turn: ThreadTurnRow, *, write: bool = True) -> Event | None:
        """The turn's recorded end when it ended without its run finishing; a turn whose
        run never began and never will is recorded ``interrupted`` first (:mod:`ends`;
        ``write`` false: only shown so, for a reader that writes nothing)."""
        return ends.settle(self.harness.store, turn, self._run_of, self._now(), write=write)

    def _before_run(self, feed: Feed, turn: ThreadTurnRow, *, ran: bool) -> list[Message]:
        """A graph turn before its run: the opening, its digest question (and the answer),
        and, when it was not accepted, the end of a turn where nothing ran."""
        store = self.harness.store
        out = feed.opening(turn.created_at)
        if digest.of(turn) is None and not ran:
            # No question of its own (forked before it was answered, or older than the
            # queued question): nothing ran in this thread, and nothing will.
            return out + feed.not_run(turn.created_at, "cancel")
        for event in store.events(ends.log_of(turn)):
            if event.type != ends.TYPE:  # the turn's end comes after its run's events
                out += feed.apply(event)
        answered = digest.answer_of(store, turn)
        if answered not in (None, ApprovalStatus.ACCEPTED):
            row = store.get_approval(str(digest.of(turn)))
            assert row is not None and row.answered_at is not None
            out += feed.not_run(row.answered_at, WORDS[answered])
        return out

    def to_json(self, row: ThreadRow, *, include_turns: bool = False) -> dict[str, Any]:
        """The thread as Codex's ``Thread`` (its turns folded only with ``include_turns``:
        a listing reads one run row per thread, not every event)."""
        busy = self._in_progress(row.thread_id) is not None
        status = {"type": "active", "activeFlags": []} if busy else {"type": "idle"}
        turns = [f.turn() for f in self.feeds(row.thread_id)] if include_turns else []
        return threads.to_json(row, status=status, turns=turns)

    def _in_progress(self, thread_id: str) -> str | None:
        """The thread's last turn when it has not ended, here or in another process."""
        running = self.active.get(thread_id)
        if running is not None and not running.done:
            return running.turn_id
        turns = self.harness.store.thread_turns(thread_id)
        if not turns or self.end_of(turns[-1]) is not None:
            return None
        last = turns[-1]
        run_id = last.run_id or self._run_of(last)
        if run_id is None:  # a graph turn whose digest question waits, or a turn starting
            if last.input.get("kind") != "graph":
                return last.turn_id  # (its process holds its start lock: ends.settle)
            return last.turn_id if digest.waiting(self.harness.store, last) else None
        run = self.harness.store.get_run(run_id)
        return last.turn_id if run is not None and not run.status.terminal else None

    # -- turns ---------------------------------------------------------------------------

    async def begin_turn(self, thread_id: str, items: Sequence[Mapping[str, Any]], *,
                         sandbox: Any = None, approval_policy: Any = None,
                         model: str | None = None, cwd: str | None = None) -> TurnRun:
        """Record a new turn (and write a conversation turn's graph); :meth:`TurnRun.drive`
        runs it. THREAD003 (archived), THREAD001 (a turn in progress), THREAD004 (no
        input); a graph turn's graph is checked here (PrepareFailed, nothing recorded).
        ``sandbox``, ``approval_policy``, ``model`` and ``cwd`` override the thread's for
        this turn and the next ones (:func:`threads.overrides`: THREAD002, THREAD007)."""
        row = self.thread(thread_id)
        if row.archived:
            raise Refused(f"thread {thread_id} is archived", code="THREAD003",
                          hint="unarchive it first (thread/unarchive)")
        busy = self._in_progress(thread_id)
        if busy is not None:
            raise Refused(f"turn {busy} is in progress on thread {thread_id}",
                          code="THREAD001", hint="wait for turn/completed, or interrupt it "
                          "(after a crash: thread/resume continues it)")
        changed = threads.overrides(row, workspace=self.harness.workspace,
                                    tiers=self.harness.config.get("tiers") or {}, cwd=cwd,
                                    sandbox=sandbox, approval_policy=approval_policy,
                                    model=model)
        row = threads.changed(row, row.updated_at, **changed)
        text = conversation.text_of(items)
        named = graph_turns.named_graph(items, Path(row.data["cwd"]))
        if not text and named is None:
            raise ConfigError("the turn's input has no text", code="THREAD004",
                              hint="send at least one item of type text")
        box, asks = row.data["sandbox"], row.data["approvalPolicy"]
        store = self.harness.store
        earlier = store.thread_turns(thread_id)
        turn_id = self._ids.new("turn")
        record: dict[str, Any] = {"items": [dict(i) for i in items], "sandbox": box,
                                  "approvalPolicy": asks}
        if named is not None:
            prepared = await self.harness.prepare(named, given={})
            record.update(kind="graph", graph=str(named),
                          plan=graph_turns.summary(prepared),
                          digestApproval=self._ids.new("apv"))
        else:
            history = [("\n\n".join([conversation.text_of(f.input), *f.steered]), _reply(f))
                       for f in self.feeds(thread_id)]
            data = conversation.graph(thread=row.data, thread_id=thread_id, turn_id=turn_id,
                                      text=text, history=history, sandbox=box,
                                      approval_policy=asks)
            path = conversation.write(self.harness.workspace, thread_id, turn_id, data)
            record.update(kind="conversation", graph=str(path))
        turn = ThreadTurnRow(thread_id=thread_id, seq=len(earlier) + 1, turn_id=turn_id,
                             input=record, created_at=self._now())
        # Taken before the turn exists, so that no process ever sees it without a run and
        # without a live process about to start one (ends.settle); TurnRun lets go.
        lock = ends.StartLock(store, turn_id)
        try:
            with store.atomic():  # a graph turn never exists without its question
                store.add_thread_turn(turn)
                if named is not None:
                    digest.ask(store, approval_id=record["digestApproval"],
                               thread_id=thread_id, turn_id=turn_id, graph=str(named),
                               plan=record["plan"], now=turn.created_at)
            self.update(thread_id, preview=row.data.get("preview") or
                        (text or str(named))[:120], **changed)
        except BaseException:
            lock.release()  # a turn recorded all the same ends interrupted, never started
            raise
        run = TurnRun(self, row, turn, start_lock=lock)
        self.active[thread_id] = run
        return run

    async def steer(self, thread_id: str, items: Sequence[Mapping[str, Any]], *,
                    expected_turn_id: str) -> str:
        """Add ``items`` to the thread's turn in progress (``turn/steer``): recorded in the
        turn's run, so the model reads them before its next step, in whichever process
        runs it. THREAD005 (no such active turn), THREAD006 (a graph turn), THREAD004."""
        busy = self._in_progress(thread_id)
        if busy is None or busy != expected_turn_id:
            now = f"turn {busy} is" if busy else "no turn is"
            raise Refused(f"turn {expected_turn_id} is not in progress on thread {thread_id} "
                          f"({now} active)", code="THREAD005",
                          hint="pass the active turn's id as expectedTurnId, or start a turn")
        turn = self.harness.store.thread_turns(thread_id)[-1]
        if turn.input.get("kind") == "graph":
            raise Refused(f"turn {busy} is a graph turn: it runs the graph approved by its "
                          "digest, and new input would change it unseen", code="THREAD006",
                          hint="interrupt it (turn/interrupt) and start a new turn")
        text = conversation.text_of(items)
        if not text:
            raise ConfigError("the steering input has no text", code="THREAD004",
                              hint="send at least one item of type text")
        running = self.active.get(thread_id)
        run_id = turn.run_id or self._run_of(turn)
        if run_id is None and running is not None and running.turn_id == busy:
            run_id = await running.run_id  # turn/start answered; its run is being created
        if run_id is None:  # another process recorded it and is starting its run
            raise Refused(f"turn {busy} on thread {thread_id} has not started its run yet",
                          code="THREAD005", hint="steer it once it runs (turn/started)")
        events.append(self.harness.store, run_id,  # type: ignore[arg-type]
                      events.EventType.INPUT_STEERED,
                      {"node": conversation.NODE, "turn": busy, "text": text,
                       "input": [dict(i) for i in items]}, self._now())
        return busy

    def reopen(self, thread_id: str) -> TurnRun | None:
        """The thread's last turn when it has not ended (after a crash, or elsewhere)."""
        row = self.thread(thread_id)
        turns = self.harness.store.thread_turns(thread_id)
        if not turns or self.end_of(turns[-1]) is not None:
            return None
        last = turns[-1]
        run_id = last.run_id or self._run_of(last)
        run = self.harness.store.get_run(run_id) if run_id else None
        if run is None:  # a graph turn asks its digest question again, or starts its run
            if not digest.waiting(self.harness.store, last):
                return None
            turn = TurnRun(self, row, last)
            self.active[thread_id] = turn
            return turn
        if run.status.terminal:
            return None
        turn = TurnRun(self, row, last)
        if not turn.run_id.done():
            turn.run_id.set_result(run.run_id)
        self.active[thread_id] = turn
        return turn

    def _feed(self, row: ThreadRow, turn: ThreadTurnRow) -> Feed:
        items = turn.input.get("items") or []
        plan = turn.input.get("plan") if turn.input.get("kind") == "graph" else None
        # Items show where commands run: the workspace, whatever directory the thread is in
        # (the thread's names the graphs its mentions find).
        return Feed(thread_id=row.thread_id, turn_id=turn.turn_id,
                    cwd=str(self.harness.workspace), input=list(items),
                    graph=plan if isinstance(plan, Mapping) else None)

    def _run_of(self, turn: ThreadTurnRow) -> str | None:
        """The run of a turn whose id was not recorded (the process died right after it
        started): found by the graph id the turn's graph carries (a graph turn's: by the
        digest it was accepted under, :func:`digest.run_of`)."""
        if turn.input.get("kind") == "graph":
            return digest.run_of(self.harness.store, turn)
        graph_id = f"rein/threads/{turn.input.get('forkedFrom') or turn.turn_id}"
        for run in self.harness.store.list_runs():
            if run.graph_id == graph_id:
                return run.run_id
        return None


def _reply(feed: Feed) -> str:
    finals = [i["text"] for i in feed.items if i.get("phase") == "final_answer"]
    return finals[-1] if finals else ""


__all__ = ["DECISIONS", "Sessions", "TurnRun"]  # TurnRun and DECISIONS live in .turn
