"""What one run holds while it executes: its context, its state, its scope instances.

:class:`RunContext` is what a run runs with, fixed for the run (store, clock, ids, workers,
routing, budgets, bound params, secrets), and its :class:`RunState`, the one part of it that
changes as the run goes; and the one way to change what is stored: :meth:`RunContext.emit`,
which writes the event and the state change in one transaction and then publishes the
event. :class:`ScopeInstance` is one instance of a scope (the root graph, one loop
iteration, one map item, a child run) with its node states and edge resolutions.

Resumption is replay with memory: a run that continues (after a pause, in another
process) is scheduled again from the start, and every node whose terminal state is in the
store is adopted as it was instead of executed. Completed work therefore never runs twice,
and nested scopes need no special treatment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen, Record, field
from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.core.time import iso
from rein.core.usage import Usage
from rein.engine.events import EventType, append, append_all
from rein.engine.run.budget import BudgetTracker, Spent
from rein.engine.run.clock import Clock, IdGenerator
from rein.engine.run.expressions import EvalScope
from rein.engine.run.graph import ScopeModel
from rein.engine.run.kinds.attempt_end import DURATION, NodeRecord
from rein.engine.run.permissions import default_policy
from rein.engine.run.routing import Router
from rein.formats.ags.spec import NodeSpec
from rein.formats.redaction import Secrets, redact
from rein.profiles.policy import Policy
from rein.store.base import ApprovalRow, Event, NodeRow, Store, Transition
from rein.workers.base import Worker

if TYPE_CHECKING:
    from rein.engine.run.signed import Signers
    from rein.formats.loader import LoadLimits

Listener = Callable[[Event], None]
# How a run executes one node, and one child run: set by the engine that builds the context
# (the node kinds call them through it, so no kind imports the engine that runs it).
NodeExecutor = Callable[["NodeAt"], Awaitable[None]]
ChildRunner = Callable[["RunContext", NodeKey, "ChildSpec"],
                       Awaitable[tuple["Final", "ScopeInstance", RunId]]]


class Final(Frozen):
    """The end of a run (or of a child run)."""

    status: RunStatus
    outputs: Mapping[str, Any] = field(default_factory=dict)
    graph_success: Mapping[str, Any] | None = None
    human_events: tuple[Mapping[str, Any], ...] = ()


class ChildSpec(Frozen):
    """What a subgraph node hands to the child runner."""

    document: Mapping[str, Any]  # the document the fragment lives in (for ``use`` lookups)
    fragment: Mapping[str, Any]  # what runs: a whole document or a fragment of one
    path: str
    digest: str
    graph_id: str
    params: Mapping[str, Any]
    context: Mapping[str, Any]


class NodeState(Record):
    """One node's state in one scope instance. Mutable; persisted through ``emit``. Its
    :attr:`record` is a value: a step that adds to it puts a new one in its place."""

    status: NodeStatus = NodeStatus.PENDING
    outputs: dict[str, Any] = field(default_factory=dict)
    decision: str | None = None
    attempts: int = 0
    inputs: dict[str, Any] | None = None
    duration: float | None = None
    unabsorbed: bool = False  # ended failed (or blocked) and the ladder did not absorb it
    degraded: bool = False  # succeeded through succeed_degraded (RT042)
    adopted: bool = False  # taken from the store on replay, not executed in this process
    spent: Spent = field(default_factory=Spent)
    record: NodeRecord = field(default_factory=NodeRecord)  # what the node's steps added

    def to_record(self, model: ScopeModel, node_id: str, key: NodeKey) -> dict[str, Any]:
        """The node_run object of the run record, redacted values left out: :attr:`record`
        (what the node's steps wrote: its times, attempts, human events) and this state's
        fields; ``key``: where the node ran (its scope path, or a stand-in's key)."""
        node = model.nodes[node_id]
        rec = self.record.to_record()
        rec["node_id"] = node_id
        rec["type"] = model.node_type(node_id)
        rec["status"] = self.status.value
        if key != node_id:  # nested scopes and stand-ins (alternate, escalation, compensation)
            rec["scope_path"] = key
        if self.inputs is not None:
            rec["inputs"] = _unredacted(self.inputs, node.get("inputs"))
        if self.outputs:
            rec["outputs"] = _unredacted(self.outputs, node.get("outputs"))
            hidden = sorted(set(self.outputs) - set(rec["outputs"]))
            if hidden:
                rec["x-rein-redacted"] = hidden
        if self.decision is not None:
            rec["decision"] = self.decision
        if self.unabsorbed:
            rec["x-rein-unabsorbed"] = True
        if self.degraded:
            rec["x-rein-degraded"] = True
        return rec

    def adopt(self, record: Mapping[str, Any]) -> None:
        """Take this state's fields from ``record``, the node_run object a node that ended
        in an earlier process left in the store (:meth:`to_record`'s inverse but for the
        status, which :func:`rein.core.states.restore` takes, checked)."""
        self.outputs = dict(record.get("outputs") or {})
        self.decision = record.get("decision")
        self.attempts = len(record.get("attempts") or [])
        self.inputs = record.get("inputs")
        self.duration = record.get(DURATION)
        self.unabsorbed = bool(record.get("x-rein-unabsorbed"))
        self.degraded = bool(record.get("x-rein-degraded"))
        self.adopted = True
        self.record = NodeRecord.from_record(record)

    def view(self) -> dict[str, Any]:
        """``nodes.<id>`` as expressions see it."""
        out: dict[str, Any] = {
            "status": self.status.value,
            "outputs": self.outputs,
            "attempts": self.attempts,
            "duration_seconds": self.duration,
        }
        if self.decision is not None:
            out["decision"] = self.decision
        return out


class _NodeViews(Mapping[str, Any]):
    """``nodes`` as a lazy mapping: a view is built only for the node an expression names."""

    def __init__(self, states: Mapping[str, NodeState]) -> None:
        self._states = states

    def __getitem__(self, key: str) -> Any:
        return self._states[key].view()

    def __contains__(self, key: object) -> bool:  # without building the view
        return key in self._states

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)


class ScopeInstance(Record):
    """One instance of a scope: the root graph, a loop iteration, a map item, a child run."""

    model: ScopeModel
    path: str  # "" at the root of a run; "repair_loop[1]", "refresh_pages[3]", ...
    params: dict[str, Any]
    roots: dict[str, Any]  # graph, params, context, attachments (+ loop) for expressions
    extra: dict[str, Any] = field(default_factory=dict)  # map item names
    states: dict[str, NodeState] = field(default_factory=dict)
    edge_active: dict[int, bool] = field(default_factory=dict)  # resolved edges only
    aliases: dict[str, str] = field(default_factory=dict)  # node id → key (alternates)

    def __post_init__(self) -> None:
        for node_id in self.model.nodes:
            self.states.setdefault(node_id, NodeState())

    def key(self, node_id: str) -> NodeKey:
        if node_id in self.aliases:
            return NodeKey(self.aliases[node_id])
        return NodeKey(f"{self.path}.{node_id}" if self.path else node_id)

    def stand_in(self, node_id: str, for_node: str) -> ScopeInstance:
        """A view of this instance in which ``node_id`` runs in ``for_node``'s place."""
        states = dict(self.states)
        states[node_id] = NodeState()
        return ScopeInstance(model=self.model, path=self.path, params=self.params,
                             roots=self.roots, extra=self.extra, states=states,
                             edge_active=self.edge_active,
                             aliases={node_id: f"{self.key(for_node)}~{node_id}"})

    def scope(self) -> EvalScope:
        views = _NodeViews(self.states)

        def status(node_id: str) -> str | None:
            state = self.states.get(node_id)
            return None if state is None else state.status.value

        return EvalScope(roots=self.roots, nodes=lambda: views, statuses=status,
                         extra=self.extra)


class RunState(Record):
    """What one pass of a run learns and decides as it goes: all of a run's context that
    changes. Each pass (and each child run) starts with an empty one; what it holds is read
    from the store (the first three fields, by :func:`rein.engine.run.execution.read_state`) or
    written there as it changes (a diagnostic is an event, a budget
    stop a diagnostic), except the two that only order this pass's own work."""

    # Stored rows of this run's nodes, by key: what replay adopts instead of running again.
    memo: dict[NodeKey, NodeRow] = field(default_factory=dict)
    # Edge resolutions already in the trace, (scope, from, to, kind): a replay writes again
    # only those a crash lost between a node's end and its edges.
    edges_seen: set[tuple[str, str, str, str]] = field(default_factory=set)
    approvals: dict[str, ApprovalRow] = field(default_factory=dict)  # the queue's, by key
    diagnostics: list[dict[str, Any]] = field(default_factory=list)  # each also an event
    budget_stop: dict[str, Any] | None = None  # the limit that stopped the run (RT061)
    groups_held: set[str] = field(default_factory=set)  # parallel groups that wait
    # (finished at, scope instance, node id) of the nodes that ended here: the order in
    # which compensations run after a failure.
    completions: list[tuple[str, ScopeInstance, str]] = field(default_factory=list)


class RunEnv(Frozen, eq=False):
    """What one run runs with, fixed for the run: its documents, dependencies and limits.
    Immutable, compared by identity; a child run (subgraph) gets its own, sharing the
    dependencies (store, workers, the budget tracker, secrets, the executors)."""

    store: Store
    run_id: RunId
    workspace: Path
    graph: Mapping[str, Any]  # the root document (or the fragment of a use/inline child)
    graph_path: str
    digest: str
    clock: Clock
    ids: IdGenerator
    workers: tuple[Worker, ...]
    router: Router
    budget: BudgetTracker
    policy: Mapping[str, Any]
    max_parallel_nodes: int
    max_depth: int
    secrets: Mapping[str, str]  # name → value; never written anywhere
    environ: Mapping[str, str]  # the process environment nodes may declare names from
    depth: int = 0
    resume_policy: str = "resume_incomplete"  # which stored nodes replay adopts (recovery)
    checkers: Mapping[str, Any] | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # backoff; tests inject a no-op
    # rein.toml [policy]: the ceiling a node's requirements are checked against.
    harness_policy: Policy = field(default_factory=default_policy)
    # Referenced child document path → the digest the run was approved with (None: a run
    # recorded before children were pinned). A child that no longer matches does not run.
    approved_children: Mapping[str, str] | None = None
    # Where approvals are signed: the allowed signers every answer is checked against before
    # the run acts on it (rein.engine.run.signed.Signers); None where they are not.
    signers: Signers | None = None
    # rein.toml [limits]: what the loader may read of a child document (its defaults: None).
    load_limits: LoadLimits | None = None
    execute_node: NodeExecutor  # runs one node of a scope to its end (or a pause)
    run_child: ChildRunner  # runs (or continues) the child run of a subgraph node

    def now(self) -> str:
        return iso(self.clock.now())

    @property
    def secret_values(self) -> frozenset[str]:
        """Every secret the store redacts (provider keys included) and the run's own."""
        return self.store.secrets.values | frozenset(v for v in self.secrets.values() if v)

    def known_secrets(self) -> Secrets:
        """Every secret the run knows: the store's and the run's own."""
        return self.store.secrets | Secrets.of(self.secrets)

    def redact(self, value: Any) -> Any:
        """``value`` with every secret the run knows replaced, as the store writes it."""
        return redact(value, self.known_secrets())

    def emit(self, event_type: EventType, payload: Mapping[str, Any],
             change: Transition | None = None, *, hold: bool = False,
             at: str | None = None) -> Event:
        """Write one event (and the state it describes) in one transaction: the event log's
        :func:`rein.engine.events.append`. The store redacts both; the log publishes the
        event as stored once the transaction commits. ``hold``: the next write commits it
        (only for a step whose loss in a crash equals not having taken it yet). ``at``: the
        event's time when the caller just read the clock for the state it writes (one
        reading for both); now otherwise."""
        return append(self.store, self.run_id, event_type, payload,
                      self.now() if at is None else at, change, hold=hold)

    def emit_all(self, event_type: EventType, payloads: Sequence[Mapping[str, Any]]) -> None:
        """Write several events of one type, found by one step, in one transaction
        (:func:`rein.engine.events.append_all`)."""
        append_all(self.store, self.run_id, event_type, payloads, self.now())

    def save_node(self, inst: ScopeInstance, node_id: str, event_type: EventType,
                  payload: Mapping[str, Any] | None = None, *, hold: bool = False,
                  at: str | None = None) -> None:
        """Persist a node's current state with the event that changed it (``hold``, ``at``:
        see :meth:`emit`)."""
        state = inst.states[node_id]
        key = inst.key(node_id)
        record = state.to_record(inst.model, node_id, key)
        row = NodeRow(run_id=self.run_id, node_key=key, node_id=node_id,
                      scope_path=inst.path, type=record["type"], status=state.status,
                      record=record)
        body = {"node": key, "status": record["status"], **(payload or {})}
        self.emit(event_type, body, Transition(node=row), hold=hold, at=at)


class RunContext(Frozen, eq=False):
    """One run (or child run) as it executes: its :class:`RunEnv`, the environment fixed
    for the run, and its :class:`RunState`, what it learns as it goes (read from the store
    when a pass begins). The two are kept apart: nothing here changes the environment, and
    the state holds no dependency. A child run has its own of both, the environment
    sharing the parent's dependencies."""

    env: RunEnv
    state: RunState = field(default_factory=RunState)  # the run's own, empty at its start
    parent: RunContext | None = None

    def child(self, *, run_id: RunId, graph: Mapping[str, Any], graph_path: str, digest: str,
              max_parallel_nodes: int, policy: Mapping[str, Any] | None = None,
              state: RunState | None = None) -> RunContext:
        """The context of a child run: what the run shares (store, workers, budget, secrets,
        the executors) is inherited as it is; the child's own ``state`` (as the store holds
        it), empty when not given. Its own document's ``policy`` replaces the parent's."""
        env = self.env
        if policy is None:
            policy = dict(graph.get("policy") or env.policy)
        shared = {name: getattr(env, name) for name in INHERITED}
        child = RunEnv(**shared, run_id=run_id, graph=graph, graph_path=graph_path,
                       digest=digest, policy=policy, max_parallel_nodes=max_parallel_nodes,
                       depth=env.depth + 1)
        return RunContext(env=child, parent=self, state=RunState() if state is None else state)

    # -- the environment's operations, on this run ---------------------------------------

    def now(self) -> str:
        return self.env.now()

    def emit(self, event_type: EventType, payload: Mapping[str, Any],
             change: Transition | None = None, *, hold: bool = False,
             at: str | None = None) -> Event:
        """:meth:`RunEnv.emit`: one event and the state it describes, in one transaction."""
        return self.env.emit(event_type, payload, change, hold=hold, at=at)

    def emit_all(self, event_type: EventType, payloads: Sequence[Mapping[str, Any]]) -> None:
        """:meth:`RunEnv.emit_all`: several events of one type, in one transaction."""
        self.env.emit_all(event_type, payloads)

    def save_node(self, inst: ScopeInstance, node_id: str, event_type: EventType,
                  payload: Mapping[str, Any] | None = None, *, hold: bool = False,
                  at: str | None = None) -> None:
        """:meth:`RunEnv.save_node`: a node's current state with the event that changed it."""
        self.env.save_node(inst, node_id, event_type, payload, hold=hold, at=at)

    def root(self) -> RunContext:
        ctx = self
        while ctx.parent is not None:
            ctx = ctx.parent
        return ctx

    def spend(self, usage: Usage) -> None:
        """Count what an attempt (or a judge) spent against the run. Work that went past a
        graph limit stops the run (RT061) even when it was the last thing to run: a run
        that overspent cannot end ``succeeded``."""
        root = self.root()
        root.env.budget.spent.add(usage)
        exc = root.env.budget.overrun(self.env.clock.now())
        if exc is not None and root.state.budget_stop is None:
            root.state.budget_stop = {"message": exc.message, **exc.to_json()}


class NodeAt(Frozen, kw_only=False, eq=False):
    """One node of one scope instance of a run: what the steps of a node (its kind, its
    attempts, its ladder, its inputs and checkpoints) work on, as one value. ``run`` is the
    run (its environment and its state), ``inst`` the scope instance, ``nid`` the node's id
    in it; a stand-in (an alternate, an escalation, a compensation) is a ``NodeAt`` of its
    own, in a view of the instance."""

    run: RunContext
    inst: ScopeInstance
    nid: str

    @property
    def env(self) -> RunEnv:
        return self.run.env

    @property
    def key(self) -> NodeKey:
        """Where the node runs in the run: its scope path (or a stand-in's key)."""
        return self.inst.key(self.nid)

    @property
    def state(self) -> NodeState:
        return self.inst.states[self.nid]

    @property
    def spec(self) -> NodeSpec:
        return self.inst.model.specs[self.nid]

    @property
    def node(self) -> Mapping[str, Any]:
        """The node as the document declares it (the graph's defaults merged)."""
        return self.inst.model.nodes[self.nid]

    def save(self, event_type: EventType, payload: Mapping[str, Any] | None = None, *,
             hold: bool = False, at: str | None = None) -> None:
        """:meth:`RunEnv.save_node` of this node."""
        self.run.env.save_node(self.inst, self.nid, event_type, payload, hold=hold, at=at)


# What a child run takes from its parent unchanged: everything else is the child's own.
INHERITED = ("store", "workspace", "clock", "ids", "workers", "router", "budget", "max_depth",
             "secrets", "environ", "sleep", "checkers", "harness_policy", "signers",
             "load_limits", "execute_node", "run_child")


def _unredacted(values: Mapping[str, Any], specs: Any) -> dict[str, Any]:
    specs = specs if isinstance(specs, Mapping) else {}
    return {k: v for k, v in values.items()
            if not (isinstance(specs.get(k), Mapping) and specs[k].get("redact"))}


def run_status_for_pause(reason: str) -> RunStatus:
    return RunStatus.AWAITING_HUMAN if reason == "human" else RunStatus.WAITING
