"""The worker boundary: one small async interface between the engine and whoever does the work.

A task or decision node's attempt is handed to a worker as an :class:`AttemptRequest`.
The worker streams :class:`Item` records (messages, tool calls, tool results, usage) as it
goes and finishes with exactly one :class:`AttemptResult`. The engine persists every item
as an event before it publishes it; the store, the CLI progress and the protocol surfaces
all read that one stream.

Three kinds implement it (DESIGN.md decision 4): ``driver`` (inverted orchestration: an
external agent answers an instruction), ``model`` (rein runs the agent loop against a
provider), ``command`` (a CLI agent as a subprocess). The scripted worker in
:mod:`rein.workers.scripted` is a test double that answers from a file.

A worker never decides whether the node succeeded: it returns outputs and usage, and the
engine evaluates the criteria. A worker that cannot finish now (a driver waiting for its
agent, a tool call waiting for approval) raises :class:`WorkerPaused`; the engine records
the pause and the run exits with code 3 until the answer arrives.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen, field
from rein.core.tiers import Tier
from rein.core.usage import Budget, Usage


class Routed(Frozen):
    """How a tier request was served (recorded per attempt, AGS §11.4)."""

    requested_tier: Tier
    effective_tier: Tier
    provider: str
    model: str
    downgraded: bool = False
    reason: str | None = None


class OutputSpec(Frozen):
    """A declared node output, as the worker needs to know it."""

    name: str
    type: str
    description: str
    required: bool = True
    path_hint: str | None = None
    schema: Mapping[str, Any] | None = None


class Feedback(Frozen):
    """Why the previous attempt failed: each failed criterion's description and evidence."""

    failure_class: FailureClass
    summary: str
    failed_criteria: tuple[Mapping[str, Any], ...] = ()


class AttemptRequest(Frozen):
    """Everything a worker may know about one attempt of one node."""

    run_id: str
    node_id: str  # scoped id, e.g. "fix_loop/iter-2/edit" for nested scopes
    attempt: int  # 1-based
    kind: Literal["task", "decision", "judge"]
    title: str
    brief: str  # description + rendered instructions
    inputs: Mapping[str, Any]  # resolved once, reused verbatim by every retry
    outputs: tuple[OutputSpec, ...]
    permissions: tuple[str, ...]  # effective AGS permission strings, already narrowed
    tools: tuple[str, ...]  # effective tool names, already narrowed
    workspace: str  # absolute path of the workspace (or the attempt's worktree)
    workspace_access: Literal["none", "read_only", "read_write"] = "read_only"
    network: Literal["none", "restricted", "full"] = "none"
    env: Mapping[str, str] = field(default_factory=dict)  # declared environment + secrets
    secret_names: frozenset[str] = frozenset()  # values in ``env`` that must never be recorded
    tier: Tier = "standard"
    budget: Budget = field(default_factory=Budget)
    feedback: Feedback | None = None
    # What the harness will check after the attempt ({id, kind, description, severity}).
    # For the worker's information only: the harness, never the worker, decides success.
    checks: tuple[Mapping[str, Any], ...] = ()
    branches: tuple[Mapping[str, str], ...] = ()  # decision nodes: [{label, description}]
    constraints: Mapping[str, Any] = field(default_factory=dict)  # temperature, seed, ...
    profile: str | None = None  # an OAP profile name or path serving this node, if any
    worker: str | None = None  # an explicit worker choice (``x-rein-worker``), if any
    routed: Routed | None = None  # how the router served ``tier``, when a routing profile is set
    session: AttemptSession | None = None  # saved state and approvals, offered by the engine
    # What the model read before this node's brief: a conversation turn's earlier turns, as
    # JSON messages (rein.workers.conversation.dump_messages), redacted (``x-rein-transcript``).
    transcript: tuple[Mapping[str, Any], ...] = ()

    @property
    def serving_tier(self) -> Tier:
        """The tier a worker must serve: the routed one when the router chose, else ``tier``."""
        return self.routed.effective_tier if self.routed is not None else self.tier

    def served_by(self, provider: str, model: str) -> Routed:
        """How this attempt was served by ``provider``/``model``: the router's tiers (and its
        downgrade) when a routing profile chose, else the node's own tier."""
        r = self.routed
        if r is None:
            return Routed(requested_tier=self.tier, effective_tier=self.tier,
                          provider=provider, model=model)
        return Routed(requested_tier=r.requested_tier, effective_tier=r.effective_tier,
                      provider=provider, model=model, downgraded=r.downgraded, reason=r.reason)


Answer = Literal["accept", "decline", "cancel"]


@runtime_checkable
class AttemptSession(Protocol):
    """What the engine offers one attempt beyond its inputs: state that survives a pause, and
    the approval queue. A worker that must wait saves its state, then raises
    :class:`WorkerPaused`; when the run continues, the same attempt finds that state again."""

    def load_state(self) -> Mapping[str, Any] | None:
        """The state this attempt saved before it paused, or ``None`` for a fresh start."""
        ...

    def save_state(self, state: Mapping[str, Any] | None) -> None:
        """Persist the attempt's state (``None`` clears it) in the run's store."""
        ...

    async def ask(self, key: str, request: Mapping[str, Any], *,
                  kind: str = "tool_call") -> tuple[str, Answer | None]:
        """Put a question in the approval queue (idempotent per ``key`` and material):
        ``(approval_id, answer)``, the answer ``None`` while nobody has answered. ``kind``
        is ``tool_call`` (one call of this attempt) or ``mcp_launch`` (a profile's server)."""
        ...


@runtime_checkable
class Steerable(Protocol):
    """An :class:`AttemptSession` that also takes input a person adds while the attempt
    runs (``turn/steer``): the model reads it before its next step."""

    def steered(self) -> Sequence[str]:
        """Every text added to this attempt's node so far, oldest first."""
        ...


class ItemKind(enum.StrEnum):
    """What a worker streams. Item kinds follow the Codex thread/turn/item vocabulary."""

    MESSAGE = "message"  # model or agent text
    REASONING = "reasoning"  # a summary of reasoning, when a provider gives one
    TOOL_CALL = "tool_call"  # a request to run a tool (name, arguments)
    TOOL_RESULT = "tool_result"  # what the tool returned, or why it was refused
    USAGE = "usage"  # tokens and cost so far (a delta)
    NOTICE = "notice"  # something the worker wants recorded (e.g. an unenforced budget)
    HOOK_STARTED = "hook_started"  # a lifecycle hook began (recorded as hook/started)
    HOOK_COMPLETED = "hook_completed"  # it ended: completed, failed or blocked (hook/completed)
    CONTEXT_COMPACTION = "context_compaction"  # the conversation was summarised to fit
    HOOK_PROMPT = "hook_prompt"  # text hooks added to the model's context at session start


class Item(Frozen):
    """One step of an attempt, persisted as an event before it is published."""

    kind: ItemKind
    data: Mapping[str, Any]


class AttemptResult(Frozen):
    """How an attempt ended. ``failure`` set means the worker itself failed."""

    outputs: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    routed: Routed | None = None
    failure: FailureClass | None = None
    message: str | None = None  # why it failed, or a closing note
    decision: str | None = None  # decision nodes: the chosen label
    extra: Mapping[str, Any] = field(default_factory=dict)  # recorded as x- fields


class WorkerPaused(Exception):
    """Control flow, not an error: the worker waits for something outside the process.

    ``reason`` is ``driver`` (an instruction is out), ``approval`` (a tool call in ``ask``) or
    ``human``. ``token`` identifies what is awaited so the answer can be matched to it.
    """

    def __init__(self, reason: str, token: str, detail: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"waiting for {reason}")
        self.reason = reason
        self.token = token
        self.detail = dict(detail or {})


@runtime_checkable
class Worker(Protocol):
    """Who does a task node's work."""

    name: str  # "driver", "model", "command", "scripted", ...

    def can_serve(self, request: AttemptRequest) -> bool:
        """Whether this worker can take the attempt (tier, tools, kind)."""
        ...

    def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        """Stream items; the last value yielded is the :class:`AttemptResult`."""
        ...


def worker_id(worker: Worker) -> str:
    """The name a node uses to choose a worker explicitly: ``id`` when set, else ``name``."""
    return str(getattr(worker, "id", None) or worker.name)
