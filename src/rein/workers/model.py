"""The model worker: rein runs the agent loop itself, against a provider, with governed tools.

The loop (:func:`rein.workers.model_attempt.steps`) is a short async generator of typed step
records — a model turn, a tool call decided, its result, a pause, the end; :meth:`ModelWorker.run`
turns each into the items the engine records (the model's messages, each tool call, each tool
result, usage deltas and notices), ending with one :class:`AttemptResult`. Before every model call the budget is checked (steps, tokens, cost,
wall clock); before every tool call the call is counted against ``max_tool_calls`` and checked
by the toolbox (permissions, sandbox, ``ask`` rules). The model finishes by calling
``submit_outputs``, a tool rein defines from the node's declared outputs (decision nodes add a
``decision`` enum of the branch labels); its arguments are validated against that schema and
a bad submission goes back to the model as a tool error. A model that stops without
submitting is reminded once, then the attempt fails as ``output_missing``.

Permissions are narrowed once per attempt (:mod:`rein.workers.grants`: node ∩ profile ∩
rein's policy; the sandbox is checked by the toolbox at each call) and recorded as a notice.

``ask`` decisions go to the run's approval queue when the engine offers one
(``request.session``): the call is queued with its tool name and (redacted) arguments, the
conversation is saved in the store and the worker raises :class:`WorkerPaused`; when the run
continues, the loop resumes from the saved conversation and the answer decides the call
(accept: it runs; decline: the model is told a person refused it; cancel: the run stops).
Outside a run, ``ask`` goes to the ``approver`` given to the worker, and without one it is
treated as ``deny`` and the model is told why.

The loop is assembled from modules of its own: :mod:`~rein.workers.model_attempt` (the
steps of one attempt and the loop over them), :mod:`~rein.workers.model_steps` (the typed
step records it yields, which this worker turns into items), :mod:`~rein.workers.brief` (the
prompts and the ``submit_outputs`` contract), :mod:`~rein.workers.tool_calls` (one tool call
and its approval), :mod:`~rein.workers.spend` (limits), :mod:`~rein.workers.conversation` (the
state saved across a pause) and :mod:`~rein.workers.model_setup` (workers from rein.toml routes).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from rein.core.tiers import TIERS, Tier
from rein.profiles.policy import Policy
from rein.providers.base import Provider
from rein.providers.errors import ProviderResponseError
from rein.providers.types import Completed, Message, ModelRequest, ModelResponse, ToolSpec
from rein.tools.backend import current as session_binding
from rein.tools.catalog import ToolKind, definitions_for, kind_of
from rein.tools.gate import ToolPolicy
from rein.tools.gitguard import refs_now
from rein.tools.hooks import Hook
from rein.tools.sandbox import SandboxPolicy, backend_for
from rein.tools.shell import GUARDED_MODES, write_check_text
from rein.tools.toolbox import Toolbox
from rein.workers.base import AttemptRequest, AttemptResult, Item, Routed, WorkerPaused
from rein.workers.brief import SUBMIT, SYSTEM_PROMPT, render_brief, submit_schema
from rein.workers.compaction import estimate
from rein.workers.conversation import LoopState, load_messages, unseal
from rein.workers.grants import AttemptGrants, attempt_grants
from rein.workers.hook_calls import attempt_hooks
from rein.workers.model_attempt import ModelAttempt, steps
from rein.workers.model_steps import Finished, Noted, Paused
from rein.workers.session_tools import SessionTools
from rein.workers.spend import Spend
from rein.workers.tool_calls import ApprovalAsk, Approver, action_digest

# Names callers import from here; they live in the modules this worker is made of.
__all__ = [
    "DEFAULT_MAX_STEPS",
    "SUBMIT",
    "SYSTEM_PROMPT",
    "ApprovalAsk",
    "Approver",
    "ModelWorker",
    "action_digest",
    "render_brief",
    "submit_schema",
]

DEFAULT_MAX_STEPS = 50


class ModelWorker:
    """Runs a node's agent loop against a provider with the node's effective tools."""

    name = "model"

    def __init__(
        self,
        *,
        provider: Provider,
        model: str,
        stream: bool = False,
        approver: Approver | None = None,
        ask: tuple[str, ...] = (),
        denied: tuple[str, ...] = (),
        policy: Policy | None = None,
        tiers: Iterable[Tier] = TIERS,
        require_boundary: bool = False,
        http_client: Any = None,
        clock: Callable[[], float] = time.monotonic,
        max_steps: int = DEFAULT_MAX_STEPS,
        hooks: Sequence[Hook] = (),
        context_tokens: int | None = None,
        protected: Sequence[str] = (),
    ) -> None:
        self.provider = provider
        self.model = model
        self.stream = stream and provider.capabilities.streaming
        self.approver = approver
        self.ask = ask
        self.denied = denied
        self.policy = policy
        self.tiers = frozenset(tiers)
        self.require_boundary = require_boundary
        self.http_client = http_client
        self.clock = clock
        self.max_steps = max_steps
        self.hooks = tuple(hooks)  # rein.toml's lifecycle hooks for every session
        self.context_tokens = context_tokens  # the window compaction keeps the conversation in
        # Paths no node writes whatever its grants: what rein runs (see sandbox.protected_paths).
        self.protected = tuple(protected)

    def with_model(self, model: str) -> ModelWorker:
        """This worker, everything kept, serving ``model`` of the same provider."""
        return ModelWorker(
            provider=self.provider, model=model, stream=self.stream, approver=self.approver,
            ask=self.ask, denied=self.denied, policy=self.policy, tiers=self.tiers,
            require_boundary=self.require_boundary, http_client=self.http_client,
            clock=self.clock, max_steps=self.max_steps, hooks=self.hooks,
            context_tokens=self.context_tokens, protected=self.protected,
        )

    @property
    def id(self) -> str:
        """``model/<provider>``: how a node chooses this worker with ``x-rein-worker``."""
        return f"model/{self.provider.name}"

    def can_serve(self, request: AttemptRequest) -> bool:
        """Task, decision and judge attempts at a configured tier whose tools are built in."""
        return (
            request.serving_tier in self.tiers
            and self.provider.capabilities.tool_calling
            and all(kind_of(t) is not None for t in request.tools)
        )

    def grants(
        self, request: AttemptRequest, ceilings: Sequence[tuple[str, Policy]] = ()
    ) -> AttemptGrants:
        """The attempt's effective tools and permissions: node ∩ ceilings ∩ rein's policy."""
        every = [*ceilings, *((("rein.toml", self.policy),) if self.policy else ())]
        return attempt_grants(
            request.tools, request.permissions, every, denied=self.denied, ask=self.ask
        )

    def toolbox(self, request: AttemptRequest, grants: AttemptGrants | None = None) -> Toolbox:
        """The attempt's tools, policy and sandbox."""
        grants = grants or self.grants(request)
        sandbox = SandboxPolicy.for_attempt(
            request.workspace, request.workspace_access, request.network,
            require_boundary=self.require_boundary, protected=self.protected,
        )
        policy = ToolPolicy.build(
            grants.grants, sandbox=sandbox, denied=grants.denied, ask=grants.ask
        )
        secrets = {n: request.env[n] for n in request.secret_names if n in request.env}
        binding = session_binding()  # a surface whose client does the I/O (ACP)
        return Toolbox(
            tools=grants.tools,
            policy=policy,
            env=request.env,
            secrets=secrets,
            http_client=self.http_client,
            backend=binding.backend if binding is not None else None,
        )

    def routed(self, request: AttemptRequest) -> Routed:
        """How this attempt was served: the router's tiers (and downgrade), this model."""
        return request.served_by(self.provider.name, self.model)

    def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        return self.loop(request)

    async def loop(
        self,
        request: AttemptRequest,
        *,
        ceilings: Sequence[tuple[str, Policy]] = (),
        system: str = SYSTEM_PROMPT,
        user: str | None = None,
        extra: SessionTools | None = None,
        hooks: Sequence[Hook] = (),
    ) -> AsyncIterator[Item | AttemptResult]:
        """The agent loop. ``ceilings`` narrow the permissions further (an OAP profile),
        ``system`` and ``user`` replace the default prompts (a profile's assembled prompt),
        ``extra`` adds a profile session's MCP, memory and ``note_learning`` tools, ``hooks``
        the lifecycle hooks a profile binds (after rein.toml's).

        Each step record of :func:`~rein.workers.model_attempt.steps` becomes the items the
        engine records; a ``Paused`` step raises :class:`WorkerPaused`."""
        attempt, opening = self.attempt(request, ceilings=ceilings, system=system, user=user,
                                        extra=extra, hooks=hooks)
        if attempt.watches_git:  # awaited: git runs while the other turns go on
            attempt.state.refs = await refs_now(request.workspace)
        for note in opening:
            for item in note.items():
                yield item
        fresh = not any(note.data.get("resumed") for note in opening)
        async for step in steps(attempt, fresh=fresh):
            for item in step.items():
                yield item
            if isinstance(step, Finished):
                yield step.result
                return
            if isinstance(step, Paused):
                raise WorkerPaused("approval", step.approval_id,
                                   {"approval_id": step.approval_id, "tool": step.tool})

    def attempt(
        self,
        request: AttemptRequest,
        *,
        ceilings: Sequence[tuple[str, Policy]] = (),
        system: str = SYSTEM_PROMPT,
        user: str | None = None,
        extra: SessionTools | None = None,
        hooks: Sequence[Hook] = (),
    ) -> tuple[ModelAttempt, list[Noted]]:
        """The attempt, fresh or resumed from the conversation saved at a pause, and the
        notices that open it (effective permissions and sandbox, or the resume)."""
        grants = self.grants(request, ceilings)
        box = self.toolbox(request, grants)
        binding = session_binding()
        if extra is None and binding is not None and binding.mcp is not None:
            # The client's own MCP servers, launched by its surface after an approval; a
            # profile session offers its profile's servers instead.
            extra = SessionTools(hub=binding.mcp)
        schema = submit_schema(request.outputs, request.branches)
        tools = offered_tools(grants, schema, extra)
        shell = ToolKind.SHELL in {kind_of(t) for t in grants.tools}
        saved = request.session.load_state() if request.session is not None else None
        state = LoopState.from_json(unseal(request, saved)) if saved is not None else None
        if state is not None:
            if extra is not None:
                extra.replay(state.messages)
            opening = [Noted(data={"text": "resumed from the saved conversation",
                                   "resumed": True})]
        else:
            # Only the shell can reach git (file tools refuse .git); bubblewrap stops it too,
            # and this catches the process backend.
            # A conversation turn reads the thread's earlier turns first, as they happened
            # (redacted, never unsealed): the same prefix every later turn starts with.
            carried = load_messages(request.transcript)
            state = LoopState(
                messages=[*carried, Message(role="user", content=user or render_brief(request))],
                opening=len(carried),
            )
            opening = fresh_notices(grants, box, shell=shell)
        spend = Spend(
            usage=state.usage, cost_known=state.cost_known, started=self.clock() - state.elapsed
        )

        async def complete(
            messages: list[Message], offered: tuple[ToolSpec, ...], spent: Spend
        ) -> ModelResponse:
            return await self.complete(request, messages, offered, spent, system)

        attempt = ModelAttempt(
            request=request, box=box, tools=tools, schema=schema, state=state, spend=spend,
            routed=self.routed(request), complete=complete, model=self.model, clock=self.clock,
            max_steps=self.max_steps, extra=extra, approver=self.approver,
            stored=saved is not None, context_tokens=self.context_tokens,
            watches_git=shell and state.refs is None and saved is None,
        )
        if state.opening and saved is None and self.context_tokens is not None:
            # Nothing measured the carried turns yet: an estimate decides whether the first
            # call compacts them (rein.workers.compaction).
            attempt.last_input = estimate(system, state.messages, tools)
        attempt.hooks = attempt_hooks(request, box, (*self.hooks, *hooks), attempt.hook_steps,
                                      messages=lambda: attempt.state.messages)
        return attempt, opening

    async def complete(
        self,
        request: AttemptRequest,
        messages: list[Message],
        tools: tuple[ToolSpec, ...],
        spend: Spend,
        system: str = SYSTEM_PROMPT,
    ) -> ModelResponse:
        """One model call: the node's sampling constraints, output tokens capped by what the
        budget has left; a streamed answer is gathered into its final response."""
        c = request.constraints
        budget = request.budget
        max_out = c.get("max_output_tokens")
        if budget.max_output_tokens is not None:
            left = budget.max_output_tokens - (spend.usage.output_tokens or 0)
            max_out = left if max_out is None else min(max_out, left)
        model_request = ModelRequest(
            model=self.model,
            system=system,
            messages=tuple(messages),
            tools=tools,
            max_output_tokens=max_out,
            temperature=c.get("temperature"),
            top_p=c.get("top_p"),
            seed=c.get("seed") if self.provider.capabilities.seed else None,
        )
        if not self.stream:
            return await self.provider.complete(model_request)
        final: ModelResponse | None = None
        async for event in self.provider.stream(model_request):
            if isinstance(event, Completed):
                final = event.response
        if final is None:
            raise ProviderResponseError(
                f"{self.provider.name}: the stream ended without a response"
            )
        return final


def offered_tools(grants: AttemptGrants, schema: dict[str, Any],
                  extra: SessionTools | None) -> tuple[ToolSpec, ...]:
    """What the model is offered: the granted built-in tools, a profile session's own tools,
    and ``submit_outputs`` last."""
    tools = tuple(
        ToolSpec(name=d.name, description=d.description, parameters=d.parameters)
        for d in definitions_for(grants.tools)
    )
    tools += extra.specs() if extra is not None else ()
    submit = ToolSpec(
        name=SUBMIT, description="Submit the node's outputs and finish.", parameters=schema
    )
    return (*tools, submit)


def fresh_notices(grants: AttemptGrants, box: Toolbox, *, shell: bool) -> list[Noted]:
    """What a fresh attempt records first: its effective permissions and sandbox, and with a
    shell, whether the sandbox is a boundary and how writes outside the grants are caught."""
    notes = [Noted(data={
        "text": "effective permissions for this attempt",
        "permissions": grants.to_json(),
        "sandbox": box.policy.sandbox.to_codex(),
    })]
    backend = backend_for(box.policy.sandbox)
    if shell and not backend.is_boundary:
        notes.append(Noted(data={"sandbox": backend.name, "text": backend.note}))
    if shell and box.policy.sandbox.mode in GUARDED_MODES:
        notes.append(Noted(data={"sandbox": backend.name, "fs_write": write_check_text(backend)}))
    return notes
