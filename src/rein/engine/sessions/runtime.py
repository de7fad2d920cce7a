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
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.states import ApprovalStatus
from rein.engine import events
from rein.engine.clock import RandomIds
from rein.engine.sessions import conversation, graph_turns, policy, threads
from rein.engine.sessions.feed import Feed, Message, ServerRequest
from rein.errors import ConfigError, Refused
from rein.store.base import Event, ThreadRow, ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.service import Harness

# A client's decision → the approval queue's answer. `acceptForSession` also accepts the
# same exact action (same digest) for the rest of the thread's life in this process.
DECISIONS = {"accept": ApprovalStatus.ACCEPTED, "acceptForSession": ApprovalStatus.ACCEPTED,
             "decline": ApprovalStatus.DECLINED, "cancel": ApprovalStatus.CANCELLED}


class Sessions:
    """Threads and turns over one :class:`Harness` (``harness.sessions``)."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self._ids = RandomIds()
        self._runs: dict[str, asyncio.Future[str]] = {}  # graph id → the run it started
        self._for_session: dict[str, set[str]] = {}  # thread → action digests accepted
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

    def fork(self, thread_id: str) -> ThreadRow:
        """A new thread with the same history and settings; the original is untouched."""
        store = self.harness.store
        return threads.fork(store, self.thread(thread_id), self._ids.new("thr"), self._now(),
                            lambda: self._ids.new("turn"))

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
            if feed.graph is not None:
                messages += feed.opening(turn.created_at)
            run_id = turn.run_id or self._run_of(turn)
            if run_id is not None:
                for event in self.harness.store.events(run_id):  # type: ignore[arg-type]
                    messages += feed.apply(event)
            out.append((feed, messages))
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
        if not turns:
            return None
        run_id = turns[-1].run_id or self._run_of(turns[-1])
        run = self.harness.store.get_run(run_id) if run_id else None
        return turns[-1].turn_id if run is not None and not run.status.terminal else None

    # -- turns ---------------------------------------------------------------------------

    async def begin_turn(self, thread_id: str, items: Sequence[Mapping[str, Any]], *,
                         sandbox: Any = None, approval_policy: Any = None) -> TurnRun:
        """Record a new turn (and write a conversation turn's graph); :meth:`TurnRun.drive`
        runs it. THREAD003 (archived), THREAD001 (a turn in progress), THREAD004 (no
        input); a graph turn's graph is checked here (PrepareFailed, nothing recorded)."""
        row = self.thread(thread_id)
        if row.archived:
            raise Refused(f"thread {thread_id} is archived", code="THREAD003",
                          hint="unarchive it first (thread/unarchive)")
        busy = self._in_progress(thread_id)
        if busy is not None:
            raise Refused(f"turn {busy} is in progress on thread {thread_id}",
                          code="THREAD001", hint="wait for turn/completed, or interrupt it "
                          "(after a crash: thread/resume continues it)")
        text = conversation.text_of(items)
        named = graph_turns.named_graph(items, Path(row.data["cwd"]))
        if not text and named is None:
            raise ConfigError("the turn's input has no text", code="THREAD004",
                              hint="send at least one item of type text")
        box = policy.sandbox_policy(sandbox) if sandbox is not None else row.data["sandbox"]
        asks = policy.approval_policy(approval_policy or row.data["approvalPolicy"])
        store = self.harness.store
        earlier = store.thread_turns(thread_id)
        turn_id = self._ids.new("turn")
        record: dict[str, Any] = {"items": [dict(i) for i in items], "sandbox": box,
                                  "approvalPolicy": asks}
        if named is not None:
            prepared = await self.harness.prepare(named, given={})
            record.update(kind="graph", graph=str(named),
                          plan=graph_turns.summary(prepared))
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
        store.add_thread_turn(turn)
        self.update(thread_id, preview=row.data.get("preview") or (text or str(named))[:120])
        run = TurnRun(self, row, turn)
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
        assert run_id is not None  # a turn in progress has a run (see _in_progress)
        events.append(self.harness.store, run_id,  # type: ignore[arg-type]
                      events.EventType.INPUT_STEERED,
                      {"node": conversation.NODE, "turn": busy, "text": text,
                       "input": [dict(i) for i in items]}, self._now())
        return busy

    def reopen(self, thread_id: str) -> TurnRun | None:
        """The thread's last turn when it has not ended (after a crash, or elsewhere)."""
        row = self.thread(thread_id)
        turns = self.harness.store.thread_turns(thread_id)
        if not turns:
            return None
        last = turns[-1]
        run_id = last.run_id or self._run_of(last)
        run = self.harness.store.get_run(run_id) if run_id else None
        if run is None or run.status.terminal:
            return None
        turn = TurnRun(self, row, last)
        if not turn.run_id.done():
            turn.run_id.set_result(run.run_id)
        self.active[thread_id] = turn
        return turn

    def _feed(self, row: ThreadRow, turn: ThreadTurnRow) -> Feed:
        items = turn.input.get("items") or []
        plan = turn.input.get("plan") if turn.input.get("kind") == "graph" else None
        return Feed(thread_id=row.thread_id, turn_id=turn.turn_id, cwd=row.data["cwd"],
                    input=list(items), graph=plan if isinstance(plan, Mapping) else None)

    def _run_of(self, turn: ThreadTurnRow) -> str | None:
        """The run of a turn whose id was not recorded (the process died right after it
        started): found by the graph id the turn's graph carries."""
        graph_id = f"rein/threads/{turn.input.get('forkedFrom') or turn.turn_id}"
        for run in self.harness.store.list_runs():
            if run.graph_id == graph_id:
                return run.run_id
        return None


class TurnRun:
    """One turn: its run, its feed as it happens, and the answers to its questions."""

    def __init__(self, sessions: Sessions, thread: ThreadRow, turn: ThreadTurnRow) -> None:
        self.sessions, self.thread, self.row = sessions, thread, turn
        self.turn_id = turn.turn_id
        self.feed = sessions._feed(thread, turn)
        loop = asyncio.get_running_loop()
        self.run_id: asyncio.Future[str] = loop.create_future()
        self.decided: asyncio.Future[str] = loop.create_future()  # a graph turn's digest
        self.done = False
        if turn.run_id is not None:
            self.run_id.set_result(turn.run_id)

    @property
    def harness(self) -> Harness:
        return self.sessions.harness

    async def drive(self) -> None:
        """Run the turn's graph to its end or first wait (or continue it after a crash)."""
        harness = self.harness
        if self.run_id.done():
            run = harness.store.get_run(self.run_id.result())
            # Continue a run its process left behind; one another process is advancing
            # right now is only followed (its events reach this feed from the store).
            if run is not None and run.status.value in ("running", "interrupted") and \
                    not harness.store.run_locked(run.run_id):
                await harness.resume(run.run_id)
            return
        path = Path(str(self.row.input["graph"]))
        shown = None
        if self.feed.graph is not None:  # the person approves the digest they were shown
            if await self.decided != "accept":
                return
            shown = str(self.feed.graph["digest"])
        prepared = await harness.prepare(path, given={})
        self.sessions._runs[str(prepared.data["id"])] = self.run_id
        try:
            # A conversation turn's graph is rein's own, written from the client's input
            # under the thread's policy: the client's turn/start is its approval.
            await harness.start(prepared, approved=shown or prepared.digest)
        except BaseException as exc:
            if not self.run_id.done():  # the run never began: the turn fails here
                self.run_id.set_exception(exc)
            raise
        finally:
            self.sessions._runs.pop(str(prepared.data["id"]), None)

    async def stream(self, *, replay: bool = True) -> AsyncIterator[Message]:
        """The turn's feed, from its start (``replay=False``: what is stored is folded
        silently and only pending questions and new events are given), to its end."""
        if self.feed.graph is not None and not self.run_id.done():
            for message in self.feed.opening(self.row.created_at):
                yield message
            async for vetted in self._vetted(self.feed.digest_question(self.row.created_at)):
                yield vetted
            if await _first(self.run_id, self.decided) is self.decided and \
                    self.decided.result() != "accept":
                for message in self.feed.not_run(self.sessions._now(), self.decided.result()):
                    yield message
                self.done = True
                return
            for message in self.feed.resolve(f"{self.turn_id}:digest"):
                yield message
        run_id = await self.run_id
        store = self.harness.store
        if self.row.run_id is None:
            store.set_turn_run(self.turn_id, run_id)
        after = 0
        if not replay:
            for event in store.events(run_id):  # type: ignore[arg-type]
                self.feed.apply(event)
                after = event.seq
            for request in list(self.feed.pending.values()):
                async for message in self._vetted(request):
                    yield message
        try:
            async for event in events.subscribe(store, run_id, after, until_ended=True):
                for message in self.feed.apply(event):
                    if isinstance(message, ServerRequest):
                        async for vetted in self._vetted(message):
                            yield vetted
                    else:
                        yield message
        finally:
            self.done = self.feed.status != "inProgress"

    async def _vetted(self, request: ServerRequest) -> AsyncIterator[Message]:
        """A question the thread's policy answers itself (``never``: declined; the same
        action accepted for the session: accepted), or the question for the client."""
        accepted = self.sessions._for_session.get(self.thread.thread_id, set())
        action = _action_digest(self.harness, request.id)
        if self.row.input.get("approvalPolicy") == "never":
            asyncio.ensure_future(self.answer(request.id, "decline"))
        elif action is not None and action in accepted:
            asyncio.ensure_future(self.answer(request.id, "accept"))
        else:
            yield request

    async def answer(self, request_id: str, decision: str, *,
                     values: Mapping[str, Any] | None = None) -> None:
        """Answer a question of this turn (bound to the digest that was shown)."""
        status = DECISIONS.get(decision)
        if status is None:
            raise ConfigError(f"unknown decision {decision!r}", code="THREAD002",
                              hint="answer accept, acceptForSession, decline or cancel")
        request = self.feed.pending.get(request_id)
        if request_id == f"{self.turn_id}:digest":
            if not self.decided.done():
                self.decided.set_result(decision)
            return
        digest = request.digest if request is not None else None
        if decision == "acceptForSession":
            action = _action_digest(self.harness, request_id)
            if action is not None:
                self.sessions._for_session.setdefault(self.thread.thread_id, set()).add(action)
        await self.harness.answer(request_id, status, digest=digest or None, values=values)

    async def interrupt(self) -> None:
        """Stop the turn: its run is cancelled and the turn ends ``interrupted`` (a graph
        turn still waiting for its digest approval ends without a run)."""
        if self.feed.graph is not None and not self.run_id.done() and \
                not self.decided.done():
            self.decided.set_result("cancel")
            return
        run_id = await self.run_id
        await self.harness.cancel(run_id, note="turn/interrupt")


async def _first(*futures: asyncio.Future[Any]) -> asyncio.Future[Any]:
    """Whichever of ``futures`` is done first."""
    done, _ = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    return next(f for f in futures if f in done)


def _action_digest(harness: Harness, approval_id: str) -> str | None:
    row = harness.store.get_approval(approval_id)
    value = row.request.get("action_digest") if row is not None else None
    return str(value) if value else None


def _reply(feed: Feed) -> str:
    finals = [i["text"] for i in feed.items if i.get("phase") == "final_answer"]
    return finals[-1] if finals else ""
