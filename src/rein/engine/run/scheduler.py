"""The scheduling loop of AGS §17.4–§17.6 for one scope instance.

    resolve outgoing edges of newly terminal nodes
    recompute readiness of pending nodes (join + node ``when``), skip the unsatisfiable
    start ready nodes while there is capacity: topological rank, ties by declaration order,
    ``max_parallel_nodes`` slots, and never two nodes of one ``concurrency_group`` at once

Nodes run as asyncio tasks, so ``max_parallel_nodes > 1`` is real concurrency. A node that
pauses (a person, a worker) leaves its dependents pending while independent branches go on;
the scope then reports the pause upward and the run waits.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.core.states import NodeStatus, transition
from rein.engine.events import EventType
from rein.engine.run.evaluation import condition
from rein.engine.run.runtime import NodeAt, RunContext, ScopeInstance
from rein.engine.run.signals import Paused
from rein.errors import BudgetExceeded


class ScopeResult(Frozen):
    """How a scope instance ended."""

    paused: str | None = None  # "human" / "worker" when some node waits
    failed: bool = False  # some node ended with an unabsorbed failure
    halted: bool = False  # policy.on_node_failure: halt stopped it
    degraded: bool = False  # some node succeeded degraded (RT042)
    stopped: bool = False  # some node was cancelled (a halt, fail_fast, a budget stop)


class Scheduler:
    """Runs one scope instance to the end (or to a pause)."""

    def __init__(self, ctx: RunContext, inst: ScopeInstance, *, capacity: int | None = None
                 ) -> None:
        self.ctx = ctx
        self.inst = inst
        self.model = inst.model
        self.capacity = max(1, capacity or ctx.env.max_parallel_nodes)
        self.policy = str(ctx.env.policy.get("on_node_failure", "isolate"))
        self.paused: dict[str, str] = {}
        self.halted = False
        # Pending nodes whose incoming edges changed since they were last looked at: only
        # these can change readiness, which keeps a step O(edges touched), not O(nodes).
        self.dirty: set[str] = set(self.model.nodes)
        # Ready nodes by rank (a heap, stale entries dropped when popped): picking looks at
        # the few nodes it can start, not at every node of the scope (quadratic otherwise).
        self.ready: list[tuple[int, str]] = [
            (self.model.rank[n], n) for n, s in inst.states.items()
            if s.status is NodeStatus.READY]
        heapq.heapify(self.ready)

    async def run(self) -> ScopeResult:
        states = self.inst.states
        entry: set[str] | None = set(self.model.entrypoints)
        running: dict[asyncio.Task[None], str] = {}
        done: set[asyncio.Task[None]] = set()
        alone: tuple[str, BaseException | None] | None = None  # the node just run inline
        try:
            while True:
                # One scheduling step: everything it writes (edges resolved, nodes skipped)
                # shares one transaction. The step never awaits, so no other task's writes
                # join it, and each write is whole: a crash between steps loses none of
                # them, a crash inside one loses the step, which the replay redoes.
                inline: str | None = None
                with self.ctx.env.store.batch():
                    if entry is not None:
                        for nid in self.model.nodes:
                            if nid not in entry and not self.model.incoming[nid]:
                                # Never scheduled (AG903): compensation, alternate and
                                # escalation targets.
                                self._skip(nid, "unreachable")
                        entry = None
                    ended = [(running.pop(t), _error(t)) for t in
                             sorted(done, key=lambda t: self.model.rank[running[t]])]
                    if alone is not None:
                        ended.append(alone)
                        alone = None
                    for nid, exc in ended:
                        group = self._group(nid)
                        if group:
                            self.ctx.root().state.groups_held.discard(group)
                        self._finished(nid, exc)
                    if not self.halted:
                        inline = self._start_ready(running)
                if inline is not None:
                    # The only node running: nothing in this scope can change before it
                    # ends, so it is awaited here rather than as a task, which spares the
                    # task, its done callback and the wait (three turns of the event loop
                    # per node, each behind every other ready callback).
                    try:
                        await self.ctx.env.execute_node(NodeAt(self.ctx, self.inst, inline))
                        alone = (inline, None)
                    except Exception as exc:  # noqa: BLE001 - judged by _finished, as a task's is
                        alone = (inline, exc)
                    done = set()
                    continue
                if self.halted:
                    for task in running:
                        task.cancel()
                    await asyncio.gather(*running, return_exceptions=True)
                    # Stopped on purpose: recorded here, once they have wound down (a
                    # cancelled task records nothing itself: rein.engine.run.stops).
                    from rein.engine.run.stops import stop_node

                    for nid in sorted(running.values(), key=self.model.rank.__getitem__):
                        stop_node(NodeAt(self.ctx, self.inst, nid), "halted after a failure")
                    running.clear()
                    with self.ctx.env.store.batch():
                        self._update_readiness()
                if not running:
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
        if self.halted or self.ctx.root().state.budget_stop is not None:
            with self.ctx.env.store.batch():
                self._close_pending()
        return ScopeResult(
            paused=self._pause_reason(),
            failed=any(s.unabsorbed for s in states.values()),
            halted=self.halted,
            degraded=any(s.degraded for s in states.values()),
            stopped=any(s.status is NodeStatus.CANCELLED for s in states.values()),
        )

    def _start_ready(self, running: dict[asyncio.Task[None], str]) -> str | None:
        """Readiness, then start what may start: the tasks run once the step yields. A node
        that would be the only one running is returned instead, to be run inline."""
        self._update_readiness()
        if self.ctx.root().state.budget_stop is not None:
            return None
        picked = self._pickable(len(running))
        for nid in picked:
            group = self._group(nid)
            if group:
                self.ctx.root().state.groups_held.add(group)
            transition(self.inst.states[nid], NodeStatus.RUNNING)
            if not running and len(picked) == 1:
                return nid
            task = asyncio.ensure_future(self.ctx.env.execute_node(NodeAt(self.ctx, self.inst,
                                                                          nid)))
            running[task] = nid
            if len(running) >= self.capacity:
                break
        return None

    # -- node completion -------------------------------------------------------------------

    def _finished(self, nid: str, exc: BaseException | None) -> None:
        if isinstance(exc, Paused):
            self.paused[nid] = exc.reason
            return
        if isinstance(exc, BudgetExceeded):
            # The node was refused before it started: a global limit (RT061) stops the run.
            # The first reason is kept: an attempt that went over it may have set it already.
            root = self.ctx.root()
            if root.state.budget_stop is None:
                root.state.budget_stop = {"message": exc.message, **exc.to_json()}
            transition(self.inst.states[nid], NodeStatus.PENDING)
            return
        if exc is not None:
            raise exc
        state = self.inst.states[nid]
        self._resolve_edges(nid)
        if state.unabsorbed and self.policy == "halt":
            self.halted = True

    def _resolve_edges(self, nid: str) -> None:
        """Edge activation table of §17.3; ``when`` is evaluated once, here."""
        state = self.inst.states[nid]
        # Written as one (each edge an event of its own), but never after an expression:
        # evaluating one may write a warning or fail the run, and what came before it was
        # resolved before it.
        found: list[dict[str, Any]] = []
        for edge in self.model.outgoing[nid]:
            if edge.index in self.inst.edge_active:
                continue
            if edge.when or edge.kind == "conditional":
                self._write_edges(found)
            when_result: bool | None = None
            if state.status is NodeStatus.SUCCEEDED:
                if edge.kind == "sequence":
                    active = True
                elif edge.kind == "conditional":
                    when_result = self._condition(edge.when or "true", f"edge {nid}->{edge.target}")
                    active = when_result
                else:
                    active = False
            elif state.status.failed_like and edge.kind == "on_failure":
                if edge.when:
                    when_result = self._condition(edge.when, f"edge {nid}->{edge.target}")
                active = when_result is not False
            else:
                active = False
            self.inst.edge_active[edge.index] = active
            self.dirty.add(edge.target)
            seen = (self.inst.path, nid, edge.target, edge.kind) in self.ctx.state.edges_seen
            if not (state.adopted and seen):
                payload: dict[str, Any] = {"from": nid, "to": edge.target, "kind": edge.kind,
                                           "active": active, "when_result": when_result}
                if self.inst.path:
                    payload["scope"] = self.inst.path
                found.append(payload)
        self._write_edges(found)

    def _write_edges(self, found: list[dict[str, Any]]) -> None:
        """The edges resolved so far, in one write; ``found`` is emptied."""
        if found:
            self.ctx.emit_all(EventType.EDGE_RESOLVED, found[:])
            found.clear()

    def _condition(self, text: str, where: str) -> bool:
        return condition(self.ctx, self.inst.scope(), text, where)

    # -- readiness -------------------------------------------------------------------------

    def _update_readiness(self) -> None:
        changed = True
        while changed and self.dirty:
            changed = False
            todo = sorted(self.dirty, key=self.model.rank.__getitem__)
            self.dirty.clear()
            for nid in todo:
                state = self.inst.states[nid]
                if state.status is not NodeStatus.PENDING:
                    continue
                verdict = self._join(nid)
                if verdict is None:
                    continue
                if verdict is False:
                    self._skip(nid, "inactive incoming edges")
                    self._resolve_edges(nid)
                    changed = True
                    continue
                when = self.model.nodes[nid].get("when")
                if when and not self._condition(str(when), f"node {nid} when"):
                    self._skip(nid, "when was false")
                    self._resolve_edges(nid)
                    changed = True
                    continue
                transition(state, NodeStatus.READY)
                heapq.heappush(self.ready, (self.model.rank[nid], nid))

    def _join(self, nid: str) -> bool | None:
        """``True`` ready, ``False`` to skip, ``None`` still waiting."""
        incoming = self.model.incoming[nid]
        if not incoming:
            return True
        node = self.model.nodes[nid]
        active = unresolved = 0
        for edge in incoming:
            value = self.inst.edge_active.get(edge.index)
            if value is None:
                unresolved += 1
            elif value or self._continue_through(edge.source):
                active += 1
        total = len(incoming)
        join = node.get("join", "all")
        if join == "any":
            if active >= 1:
                return True
            return False if unresolved == 0 else None
        if join == "n_of":
            need = int(node.get("join_count", 1))
            if active >= need:
                return True
            return False if active + unresolved < need else None
        if unresolved:
            return None if active + unresolved == total else False
        return active == total

    def _continue_through(self, source: str) -> bool:
        """Under ``on_node_failure: continue`` an edge from a failed node does not block."""
        return self.policy == "continue" and self.inst.states[source].status.failed_like

    def _pickable(self, busy: int) -> list[str]:
        """Ready nodes to start now, by rank; the caller starts every one returned."""
        out: list[str] = []
        kept: list[tuple[int, str]] = []  # ready, but their concurrency group is busy
        held = set(self.ctx.root().state.groups_held)
        states = self.inst.states
        while self.ready and busy + len(out) < self.capacity:
            entry = heapq.heappop(self.ready)
            nid = entry[1]
            if states[nid].status is not NodeStatus.READY:
                continue  # started, skipped or cancelled since it was queued
            group = self._group(nid)
            if group and group in held:
                kept.append(entry)
                continue
            if group:
                held.add(group)
            out.append(nid)
        for entry in kept:
            heapq.heappush(self.ready, entry)
        return out

    def _group(self, nid: str) -> str | None:
        c = self.model.nodes[nid].get("constraints")
        group = c.get("concurrency_group") if isinstance(c, Mapping) else None
        return str(group) if group else None

    # -- closing ---------------------------------------------------------------------------

    def _skip(self, nid: str, reason: str) -> None:
        state = self.inst.states[nid]
        transition(state, NodeStatus.SKIPPED)
        state.record = state.record.noting({"skip_reason": reason})
        key = self.inst.key(nid)
        known = self.ctx.state.memo.get(key)
        if known is not None and known.status is NodeStatus.SKIPPED:
            state.adopted = True
            return
        self.ctx.save_node(self.inst, nid, EventType.NODE_SKIPPED, {"reason": reason})

    def _close_pending(self) -> None:
        """Nodes that can never start now: cancelled by a halt or a budget stop."""
        if not (self.halted or self.ctx.root().state.budget_stop is not None):
            return
        reason = "halted after a failure" if self.halted else "global budget reached (RT061)"
        for nid, state in self.inst.states.items():
            if state.status in (NodeStatus.PENDING, NodeStatus.READY) and nid not in self.paused:
                transition(state, NodeStatus.CANCELLED)
                state.record = state.record.noting({"x-rein-cancel-reason": reason})
                self.ctx.save_node(self.inst, nid, EventType.NODE_CANCELLED, {"reason": reason})

    def _pause_reason(self) -> str | None:
        if not self.paused:
            return None
        return "human" if "human" in self.paused.values() else next(iter(self.paused.values()))


def _error(task: asyncio.Task[None]) -> BaseException | None:
    return task.exception() if not task.cancelled() else None


__all__ = ["Scheduler", "ScopeResult"]
