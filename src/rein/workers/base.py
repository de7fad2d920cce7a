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
from rein.core.frozen import Frozen, set_field
from rein.core.tiers import Tier
from rein.core.usage import Budget, Usage


class Routed(Frozen):
    """How a tier request was served (recorded per attempt, AGS §11.4)."""

    __slots__ = ("downgraded", "effective_tier", "model", "provider", "reason", "requested_tier")
    requested_tier: Tier
    effective_tier: Tier
    provider: str
    model: str
    downgraded: bool
    reason: str | None

    def __init__(self, *, requested_tier: Tier, effective_tier: Tier, provider: str, model: str,
                 downgraded: bool = False, reason: str | None = None) -> None:
        set_field(self, "requested_tier", requested_tier)
        set_field(self, "effective_tier", effective_tier)
        set_field(self, "provider", provider)
        set_field(self, "model", model)
        set_field(self, "downgraded", downgraded)
        set_field(self, "reason", reason)


class OutputSpec(Frozen):
    """A declared node output, as the worker needs to know it."""

    __slots__ = ("description", "name", "path_hint", "required", "schema", "type")
    name: str
    type: str
    description: str
    required: bool
    path_hint: str | None
    schema: Mapping[str, Any] | None

    def __init__(self, *, name: str, type: str, description: str, required: bool = True,
                 path_hint: str | None = None, schema: Mapping[str, Any] | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "type", type)
        set_field(self, "description", description)
        set_field(self, "required", required)
        set_field(self, "path_hint", path_hint)
        set_field(self, "schema", schema)


class Feedback(Frozen):
    """Why the previous attempt failed: each failed criterion's description and evidence."""

    __slots__ = ("failed_criteria", "failure_class", "summary")
    failure_class: FailureClass
    summary: str
    failed_criteria: tuple[Mapping[str, Any], ...]

    def __init__(self, *, failure_class: FailureClass, summary: str,
                 failed_criteria: tuple[Mapping[str, Any], ...] = ()) -> None:
        set_field(self, "failure_class", failure_class)
        set_field(self, "summary", summary)
        set_field(self, "failed_criteria", failed_criteria)


class AttemptRequest(Frozen):
    """Everything a worker may know about one attempt of one node."""

    __slots__ = (
        "attempt",
        "branches",
        "brief",
        "budget",
        "checks",
        "constraints",
        "env",
        "feedback",
        "inputs",
        "kind",
        "network",
        "node_id",
        "outputs",
        "permissions",
        "profile",
        "routed",
        "run_id",
        "secret_names",
        "session",
        "tier",
        "title",
        "tools",
        "worker",
        "workspace",
        "workspace_access",
    )
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
    workspace_access: Literal["none", "read_only", "read_write"]
    network: Literal["none", "restricted", "full"]
    env: Mapping[str, str]  # declared environment + secrets
    secret_names: frozenset[str]  # values in ``env`` that must never be recorded
    tier: Tier
    budget: Budget
    feedback: Feedback | None
    # What the harness will check after the attempt ({id, kind, description, severity}).
    # For the worker's information only: the harness, never the worker, decides success.
    checks: tuple[Mapping[str, Any], ...]
    branches: tuple[Mapping[str, str], ...]  # decision nodes: [{label, description}]
    constraints: Mapping[str, Any]  # temperature, seed, ...
    profile: str | None  # an OAP profile name or path serving this node, if any
    worker: str | None  # an explicit worker choice (``x-rein-worker``), if any
    routed: Routed | None  # how the router served ``tier``, when a routing profile is set
    session: AttemptSession | None  # saved state and approvals, offered by the engine

    def __init__(self, *, run_id: str, node_id: str, attempt: int,
                 kind: Literal["task", "decision", "judge"], title: str, brief: str,
                 inputs: Mapping[str, Any], outputs: tuple[OutputSpec, ...],
                 permissions: tuple[str, ...], tools: tuple[str, ...], workspace: str,
                 workspace_access: Literal["none", "read_only", "read_write"] = "read_only",
                 network: Literal["none", "restricted", "full"] = "none",
                 env: Mapping[str, str] | None = None, secret_names: frozenset[str] = frozenset(),
                 tier: Tier = "standard", budget: Budget | None = None,
                 feedback: Feedback | None = None, checks: tuple[Mapping[str, Any], ...] = (),
                 branches: tuple[Mapping[str, str], ...] = (),
                 constraints: Mapping[str, Any] | None = None, profile: str | None = None,
                 worker: str | None = None, routed: Routed | None = None,
                 session: AttemptSession | None = None) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "node_id", node_id)
        set_field(self, "attempt", attempt)
        set_field(self, "kind", kind)
        set_field(self, "title", title)
        set_field(self, "brief", brief)
        set_field(self, "inputs", inputs)
        set_field(self, "outputs", outputs)
        set_field(self, "permissions", permissions)
        set_field(self, "tools", tools)
        set_field(self, "workspace", workspace)
        set_field(self, "workspace_access", workspace_access)
        set_field(self, "network", network)
        set_field(self, "env", {} if env is None else env)
        set_field(self, "secret_names", secret_names)
        set_field(self, "tier", tier)
        set_field(self, "budget", Budget() if budget is None else budget)
        set_field(self, "feedback", feedback)
        set_field(self, "checks", checks)
        set_field(self, "branches", branches)
        set_field(self, "constraints", {} if constraints is None else constraints)
        set_field(self, "profile", profile)
        set_field(self, "worker", worker)
        set_field(self, "routed", routed)
        set_field(self, "session", session)

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

    __slots__ = ("data", "kind")
    kind: ItemKind
    data: Mapping[str, Any]

    def __init__(self, *, kind: ItemKind, data: Mapping[str, Any]) -> None:
        set_field(self, "kind", kind)
        set_field(self, "data", data)


class AttemptResult(Frozen):
    """How an attempt ended. ``failure`` set means the worker itself failed."""

    __slots__ = ("decision", "extra", "failure", "message", "outputs", "routed", "usage")
    outputs: Mapping[str, Any]
    usage: Usage
    routed: Routed | None
    failure: FailureClass | None
    message: str | None  # why it failed, or a closing note
    decision: str | None  # decision nodes: the chosen label
    extra: Mapping[str, Any]  # recorded as x- fields

    def __init__(self, *, outputs: Mapping[str, Any] | None = None, usage: Usage | None = None,
                 routed: Routed | None = None, failure: FailureClass | None = None,
                 message: str | None = None, decision: str | None = None,
                 extra: Mapping[str, Any] | None = None) -> None:
        set_field(self, "outputs", {} if outputs is None else outputs)
        set_field(self, "usage", Usage() if usage is None else usage)
        set_field(self, "routed", routed)
        set_field(self, "failure", failure)
        set_field(self, "message", message)
        set_field(self, "decision", decision)
        set_field(self, "extra", {} if extra is None else extra)


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
