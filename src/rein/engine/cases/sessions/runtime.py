"""The session runtime: threads and turns, the use cases behind :class:`rein.Harness`.

Every surface that speaks threads (the app-server, ACP, the web console, the SDK) reaches
:class:`Sessions` through the Harness (``harness.sessions``) and decides no state change. A
turn is one run of the engine (:mod:`.conversation` for a conversation turn, the named
graph for a graph turn), so it is durable, resumable from another process, and its
approvals are entries of the one approval queue. How a turn reads as protocol messages is
the protocol layer's (:mod:`rein.protocol`), folded from the same stored events.

:class:`Sessions` is given what it uses, not the Harness that owns it: the store (its
threads, event log and approval queue), the clock, and the run use cases it calls
(:class:`RunCalls`: the engine's prepare and start, which ``rein run`` uses too; resume,
cancel, answer, the executor check).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.states import ApprovalStatus
from rein.engine import events
from rein.engine.cases.sessions import (
    carried,
    commands,
    conversation,
    digest,
    ends,
    graph_turns,
    launches,
    policy,
    replies,
)
from rein.engine.cases.sessions import threads as rows
from rein.engine.cases.sessions.turn import RunCalls, TurnRun
from rein.engine.run.clock import Clock, RandomIds
from rein.errors import ConfigError, Refused
from rein.store.base import ApprovalRow, Event, Store, ThreadRow, ThreadTurnRow


def thread_uuid() -> str:
    """A new thread's id: a UUID (version 7, time-ordered), as Codex names its threads and
    as its clients expect (a Codex client refuses a thread id that is not a UUID)."""
    import secrets
    import time

    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    value = value & ~(0xF << 76) | 0x7 << 76  # the version
    value = value & ~(0x3 << 62) | 0x2 << 62  # the RFC 9562 variant
    hexed = f"{value:032x}"
    return "-".join((hexed[:8], hexed[8:12], hexed[12:16], hexed[16:20], hexed[20:]))

class Sessions:
    """Threads and turns over one store (``harness.sessions``)."""

    def __init__(self, store: Store, *, workspace: Path, tiers: Mapping[str, Any],
                 clock: Clock, calls: RunCalls,
                 listen: Callable[[Callable[[Event], None]], Any]) -> None:
        self.store, self.workspace, self.tiers = store, workspace, tiers
        self.clock, self.calls = clock, calls
        self._ids = RandomIds()
        self.runs: dict[str, asyncio.Future[str]] = {}  # graph id → the run it started
        self.active: dict[str, TurnRun] = {}  # thread → its turn in progress here
        listen(self._heard)

    def _heard(self, event: Event) -> None:
        # The engine creates the run inside `start`; a turn learns its run id from here.
        if event.type == "run/started" and not event.payload.get("parent_run_id"):
            waiting = self.runs.get(str(event.payload.get("graph_id")))
            if waiting is not None and not waiting.done():
                waiting.set_result(str(event.run_id))

    def now(self) -> str:
        """The clock's time as turns and threads record it."""
        return self.clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    # -- threads -------------------------------------------------------------------------

    def start_thread(self, *, cwd: str | None = None, profile: str | None = None,
                     sandbox: Any = None, approval_policy: Any = None,
                     name: str | None = None, ephemeral: bool = False) -> ThreadRow:
        """A new thread (THREAD002 for a sandbox or approval policy rein does not know)."""
        tier = self.tiers.get("standard") or {}
        row = rows.new_thread(thread_uuid(), workspace=self.workspace,
                              now=self.now(), cwd=cwd, profile=profile, sandbox=sandbox,
                              approval_policy=approval_policy, name=name,
                              ephemeral=ephemeral, model=str(tier.get("model") or ""),
                              provider=str(tier.get("provider") or "rein"))
        self.store.save_thread(row)
        return row

    def thread(self, thread_id: str) -> ThreadRow:
        """The thread (THREAD404)."""
        return rows.get(self.store, thread_id)

    def threads(self, *, archived: bool = False) -> list[ThreadRow]:
        """The threads (archived ones only with ``archived``), newest first."""
        found = [r for r in self.store.list_threads() if r.archived == archived]
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    def update(self, thread_id: str, *, archived: bool | None = None, **data: Any
               ) -> ThreadRow:
        """Rename, archive or unarchive a thread, or change its settings for its next turns
        (a sandbox given as a mode or a policy is kept in its object form, THREAD002 for
        one rein does not know); recorded, and its turns are untouched."""
        if "sandbox" in data:
            data["sandbox"] = policy.sandbox_policy(data["sandbox"])
        row = rows.changed(self.thread(thread_id), self.now(), archived=archived, **data)
        self.store.save_thread(row)
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
        return rows.fork(self.store, self.thread(thread_id), thread_uuid(), self.now(),
                         lambda: self._ids.new("turn"), self.run_of)

    # -- a thread's turns, as stored -----------------------------------------------------

    def turns(self, thread_id: str) -> list[ThreadTurnRow]:
        """The thread's turns, in order (THREAD404 for an unknown thread)."""
        self.thread(thread_id)
        return self.store.thread_turns(thread_id)

    def run_of(self, turn: ThreadTurnRow) -> str | None:
        """The run a turn started: the one its row names, else (its process died right
        after it started) the run found by the graph id the turn's graph carries (a graph
        turn's: by the digest it was accepted under, :func:`digest.run_of`)."""
        if turn.run_id is not None:
            return turn.run_id
        if turn.input.get("kind") == "graph":
            return digest.run_of(self.store, turn)
        graph_id = f"rein/threads/{turn.input.get('forkedFrom') or turn.turn_id}"
        for run in self.store.list_runs():
            if run.graph_id == graph_id:
                return run.run_id
        return None

    def end_of(self, turn: ThreadTurnRow, *, write: bool = True) -> Event | None:
        """The turn's recorded end when it ended without its run finishing; a turn whose
        run never began and never will is recorded ``interrupted`` first (:mod:`ends`;
        ``write`` false: only shown so, for a reader that writes nothing)."""
        return ends.settle(self.store, turn, self.run_of, self.now(), write=write)

    def question(self, turn: ThreadTurnRow) -> ApprovalRow | None:
        """A graph turn's digest question, as the queue holds it (None: it has none)."""
        approval_id = digest.of(turn)
        return self.store.get_approval(approval_id) if approval_id else None

    def log_of(self, turn: ThreadTurnRow) -> str:
        """The id of the turn's own log: its digest question and answer, and its end."""
        return str(ends.log_of(turn))

    def transcript(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's turns so far as the messages a new conversation turn's model reads
        first, oldest first (:mod:`.carried`): each turn's words, its model's answers, tool
        calls and their results, as recorded (redacted)."""
        out: list[dict[str, Any]] = []
        used: set[str] = set()
        for turn in self.turns(thread_id):
            self.end_of(turn)  # a turn that will never start is recorded so
            run_id = self.run_of(turn)
            told = self.store.events(run_id, types=("input/steered", "node/finished",  # type: ignore[arg-type]
                                                    "run/finished", "item")) if run_id else []
            graph = turn.input.get("kind") == "graph"
            refused = None
            if graph:
                answer = self.question(turn)
                if answer is None and run_id is None:
                    refused = "cancel"  # no question of its own: nothing ran, nor will
                elif answer is not None and answer.status not in (
                        ApprovalStatus.PENDING, ApprovalStatus.ACCEPTED):
                    refused = replies.WORDS[answer.status]
            items = turn.input.get("items") or []
            if turn.input.get("compaction"):  # its summary stands for everything before
                summary = replies.reply(graph=False, run_events=told, refused=None)
                if summary:
                    out = [{"role": "user", "content": carried.SUMMARY_HEADER + summary}]
                continue
            out += carried.turn_messages(
                seq=turn.seq, said=replies.said(items, told),
                reply=replies.reply(graph=graph, run_events=told, refused=refused),
                run_events=told, conversation=not graph, used=used)
        return out

    def in_progress(self, thread_id: str) -> str | None:
        """The thread's last turn when it has not ended, here or in another process."""
        running = self.active.get(thread_id)
        if running is not None and not running.done:
            return running.turn_id
        turns = self.store.thread_turns(thread_id)
        if not turns or self.end_of(turns[-1]) is not None:
            return None
        last = turns[-1]
        run_id = self.run_of(last)
        if run_id is None:  # a graph turn whose digest question waits, or a turn starting
            if last.input.get("kind") != "graph":
                return last.turn_id  # (its process holds its start lock: ends.settle)
            return last.turn_id if digest.waiting(self.store, last) else None
        run = self.store.get_run(run_id)
        return last.turn_id if run is not None and not run.status.terminal else None

    # -- turns ---------------------------------------------------------------------------

    async def begin_turn(self, thread_id: str, items: Sequence[Mapping[str, Any]], *,
                         sandbox: Any = None, approval_policy: Any = None,
                         model: str | None = None, cwd: str | None = None,
                         compaction: bool = False) -> TurnRun:
        """Record a new turn (and write a conversation turn's graph); :meth:`TurnRun.drive`
        runs it. THREAD003 (archived), THREAD001 (a turn in progress), THREAD004 (no
        input); a graph turn's graph is checked here (PrepareFailed, nothing recorded).
        ``sandbox``, ``approval_policy``, ``model`` and ``cwd`` override the thread's for
        this turn and the next ones (:func:`threads.overrides`: THREAD002, THREAD007).
        ``compaction``: a turn that summarizes the thread (:meth:`compact`)."""
        row = self.thread(thread_id)
        if row.archived:
            raise Refused(f"thread {thread_id} is archived", code="THREAD003",
                          hint="unarchive it first (thread/unarchive)")
        busy = self.in_progress(thread_id)
        if busy is not None:
            raise Refused(f"turn {busy} is in progress on thread {thread_id}",
                          code="THREAD001", hint="wait for turn/completed, or interrupt it "
                          "(after a crash: thread/resume continues it)")
        changed = rows.overrides(row, workspace=self.workspace, tiers=self.tiers, cwd=cwd,
                                 sandbox=sandbox, approval_policy=approval_policy,
                                 model=model)
        row = rows.changed(row, row.updated_at, **changed)
        text = conversation.text_of(items)
        named = graph_turns.named_graph(items, Path(row.data["cwd"]))
        if not text and named is None:
            raise ConfigError("the turn's input has no text", code="THREAD004",
                              hint="send at least one item of type text")
        box, asks = row.data["sandbox"], row.data["approvalPolicy"]
        store = self.store
        earlier = store.thread_turns(thread_id)
        turn_id = self._ids.new("turn")
        record: dict[str, Any] = {"items": [dict(i) for i in items], "sandbox": box,
                                  "approvalPolicy": asks}
        if compaction:
            named = None
            record["compaction"] = True
        if named is not None:
            prepared = self.calls.prepare(named, given={})
            record.update(kind="graph", graph=str(named),
                          plan=graph_turns.summary(prepared),
                          digestApproval=self._ids.new("apv"))
        else:
            data = conversation.graph(thread=row.data, thread_id=thread_id, turn_id=turn_id,
                                      text=text, transcript=self.transcript(thread_id),
                                      sandbox=box,
                                      approval_policy=asks, compaction=compaction)
            path = conversation.write(self.workspace, thread_id, turn_id, data)
            record.update(kind="conversation", graph=str(path))
        turn = ThreadTurnRow(thread_id=thread_id, seq=len(earlier) + 1, turn_id=turn_id,
                             input=record, created_at=self.now())
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

    async def compact(self, config: Any, thread_id: str) -> TurnRun:
        """A turn that replaces the thread's carried turns by the model's summary of them
        (``thread/compact/start``): the ``PreCompact`` hooks run first (``trigger:
        manual``; a block refuses it, THREAD011), then a turn whose model is asked for the
        summary, with no tool; the turns after it carry that summary in place of the
        earlier ones. THREAD001, THREAD003 as any turn."""
        from rein.tools.hooks import HookRunner
        from rein.workers.compaction import SUMMARY_REQUEST

        row = self.thread(thread_id)
        hooks = HookRunner.for_config(config, cwd=Path(row.data["cwd"]), session_id=thread_id)
        chain = await hooks.run("PreCompact", {"trigger": "manual",
                                               "custom_instructions": ""})
        if chain.blocked is not None:
            raise Refused(f"compaction blocked by hook {chain.blocked_by}: {chain.blocked}",
                          code="THREAD011", hint="the hook decides; nothing was compacted")
        return await self.begin_turn(thread_id, [{"type": "text", "text": SUMMARY_REQUEST}],
                                     compaction=True)

    async def steer(self, thread_id: str, items: Sequence[Mapping[str, Any]], *,
                    expected_turn_id: str) -> str:
        """Add ``items`` to the thread's turn in progress (``turn/steer``): recorded in the
        turn's run, so the model reads them before its next step, in whichever process
        runs it. THREAD005 (no such active turn), THREAD006 (a graph turn), THREAD004."""
        busy = self.in_progress(thread_id)
        if busy is None or busy != expected_turn_id:
            now = f"turn {busy} is" if busy else "no turn is"
            raise Refused(f"turn {expected_turn_id} is not in progress on thread {thread_id} "
                          f"({now} active)", code="THREAD005",
                          hint="pass the active turn's id as expectedTurnId, or start a turn")
        turn = self.store.thread_turns(thread_id)[-1]
        if turn.input.get("kind") == "graph":
            raise Refused(f"turn {busy} is a graph turn: it runs the graph approved by its "
                          "digest, and new input would change it unseen", code="THREAD006",
                          hint="interrupt it (turn/interrupt) and start a new turn")
        text = conversation.text_of(items)
        if not text:
            raise ConfigError("the steering input has no text", code="THREAD004",
                              hint="send at least one item of type text")
        running = self.active.get(thread_id)
        run_id = self.run_of(turn)
        if run_id is None and running is not None and running.turn_id == busy:
            run_id = await running.run_id  # turn/start answered; its run is being created
        if run_id is None:  # another process recorded it and is starting its run
            raise Refused(f"turn {busy} on thread {thread_id} has not started its run yet",
                          code="THREAD005", hint="steer it once it runs (turn/started)")
        events.append(self.store, run_id,  # type: ignore[arg-type]
                      events.EventType.INPUT_STEERED,
                      {"node": conversation.NODE, "turn": busy, "text": text,
                       "input": [dict(i) for i in items]}, self.now())
        return busy

    def reopen(self, thread_id: str) -> TurnRun | None:
        """The thread's last turn when it has not ended (after a crash, or elsewhere)."""
        row = self.thread(thread_id)
        turns = self.store.thread_turns(thread_id)
        if not turns or self.end_of(turns[-1]) is not None:
            return None
        last = turns[-1]
        run_id = self.run_of(last)
        run = self.store.get_run(run_id) if run_id else None
        if run is None:  # a graph turn asks its digest question again, or starts its run
            if not digest.waiting(self.store, last):
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

    # -- a client's standalone command (command/exec) ----------------------------------

    def check_command(self, config: Any, argv: Sequence[str], *, thread_id: str | None = None,
                      sandbox: Any = None, cwd: str | None = None) -> commands.Command:
        """Decide ``argv`` as the thread's (or a new thread's) shell tool call would be
        decided (:mod:`.commands`); nothing runs."""
        row = self.thread(thread_id) if thread_id is not None else None
        return commands.check(config, self.workspace, row, argv, sandbox=sandbox, cwd=cwd)

    def readable(self, config: Any, *, thread_id: str | None = None) -> Any:
        """A check of the workspace paths the thread's file tools may read
        (:func:`commands.readable`): what a client's file search may show."""
        row = self.thread(thread_id) if thread_id is not None else None
        return commands.readable(config, self.workspace, row)

    def ask_command(self, thread_id: str, command: commands.Command, *, origin: str
                    ) -> ApprovalRow:
        """Queue the question of an asked command under the thread (:func:`commands.ask`);
        its answer is awaited with :meth:`launch_answered`, withdrawn with
        :meth:`withdraw_launch`, read with :meth:`launch_status`."""
        return commands.ask(self.store, command, approval_id=self._ids.new("apv"),
                            thread_id=thread_id, origin=origin, now=self.now())

    async def run_command(self, command: commands.Command, *, env: Mapping[str, str],
                          timeout: float | None, max_output_bytes: int) -> Any:
        """Run a command rein allowed or a person accepted, confined as a tool call is."""
        return await commands.run(command, env=env, timeout=timeout,
                                  max_output_bytes=max_output_bytes)

    # -- an editor's MCP server launches (ACP) ------------------------------------------

    def ask_launch(self, thread_id: str, turn_id: str, server: str,
                   launch: Mapping[str, Any], *, origin: str) -> ApprovalRow:
        """Queue the launch of ``server`` as shown (:mod:`.launches`)."""
        return launches.ask(self.store, approval_id=self._ids.new("apv"), thread_id=thread_id,
                            turn_id=turn_id, server=server, launch=launch, origin=origin,
                            now=self.now())

    def withdraw_launch(self, row: ApprovalRow, *, note: str) -> None:
        """Cancel a launch that still waits: nothing is left to launch it."""
        launches.withdraw(self.store, row, note=note, now=self.now())

    def withdraw_stale_launches(self, thread_id: str) -> None:
        """Cancel the launches still waiting from an earlier serving of the session."""
        launches.withdraw_stale(self.store, thread_id, now=self.now())

    def launch_status(self, approval_id: str, *, usable: bool = False) -> ApprovalStatus:
        """A launch's status as stored; ``usable``: as a launch may act on it (an answer
        that does not verify where answers are signed is refused, and it waits again)."""
        if not usable:
            return launches.status(self.store, approval_id)
        return launches.usable(self.store, approval_id, self.calls.signers(),
                               self.clock.now())

    def launch_answered(self, row: ApprovalRow) -> Awaitable[ApprovalStatus]:
        """The launch's answer once it is given after now (the thread's log is read at
        this call, not when the wait begins), here or in another process."""
        logged = self.store.events(row.run_id)
        return launches.wait(self.store, row, logged[-1].seq if logged else 0)


__all__ = ["RunCalls", "Sessions", "TurnRun"]  # RunCalls and TurnRun live in .turn
