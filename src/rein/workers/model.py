"""The model worker: rein runs the agent loop itself, against a provider, with governed tools.

The loop (:meth:`ModelWorker.run`) is one async generator of typed items — the model's
messages, each tool call, each tool result, usage deltas and notices — ending with one
:class:`AttemptResult`. Before every model call the budget is checked (steps, tokens, cost,
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

The loop is assembled from modules of its own: :mod:`~rein.workers.brief` (the prompts and
the ``submit_outputs`` contract), :mod:`~rein.workers.tool_calls` (one tool call and its
approval), :mod:`~rein.workers.spend` (limits), :mod:`~rein.workers.conversation` (the state
saved across a pause) and :mod:`~rein.workers.model_setup` (workers from rein.toml routes).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from rein.core.failures import FailureClass
from rein.core.tiers import TIERS, Tier
from rein.core.usage import Usage
from rein.profiles.policy import Policy
from rein.providers.base import Provider
from rein.providers.errors import ProviderError
from rein.providers.types import Completed, Message, ModelRequest, ModelResponse, ToolSpec
from rein.tools.catalog import ToolKind, definitions_for, kind_of
from rein.tools.gate import ToolPolicy
from rein.tools.gitguard import git_refs, moved_refs
from rein.tools.sandbox import SandboxPolicy, backend_for
from rein.tools.shell import GUARDED_MODES, write_check_text, written_outside_message
from rein.tools.toolbox import Toolbox
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, Routed, WorkerPaused
from rein.workers.brief import (
    SUBMIT,
    SYSTEM_PROMPT,
    render_brief,
    submission_problem,
    submit_schema,
)
from rein.workers.conversation import LoopState, unseal
from rein.workers.grants import AttemptGrants, attempt_grants
from rein.workers.model_setup import model_workers
from rein.workers.session_tools import SessionTools
from rein.workers.spend import Spend, limit_reached, usage_json
from rein.workers.tool_calls import ApprovalAsk, Approver, Waiting, action_digest, run_tool

# Names callers import from here; they live in the modules this worker is made of.
__all__ = [
    "DEFAULT_MAX_STEPS",
    "SUBMIT",
    "SYSTEM_PROMPT",
    "ApprovalAsk",
    "Approver",
    "ModelWorker",
    "action_digest",
    "model_workers",
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
            require_boundary=self.require_boundary,
        )
        policy = ToolPolicy.build(
            grants.grants, sandbox=sandbox, denied=grants.denied, ask=grants.ask
        )
        secrets = {n: request.env[n] for n in request.secret_names if n in request.env}
        return Toolbox(
            tools=grants.tools,
            policy=policy,
            env=request.env,
            secrets=secrets,
            http_client=self.http_client,
        )

    def routed(self, request: AttemptRequest) -> Routed:
        """How this attempt was served: the router's tiers (and downgrade), this model."""
        r = request.routed
        if r is None:
            return Routed(
                requested_tier=request.tier,
                effective_tier=request.tier,
                provider=self.provider.name,
                model=self.model,
            )
        return Routed(
            requested_tier=r.requested_tier,
            effective_tier=r.effective_tier,
            provider=self.provider.name,
            model=self.model,
            downgraded=r.downgraded,
            reason=r.reason,
        )

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
    ) -> AsyncIterator[Item | AttemptResult]:
        """The agent loop. ``ceilings`` narrow the permissions further (an OAP profile),
        ``system`` and ``user`` replace the default prompts (a profile's assembled prompt),
        ``extra`` adds a profile session's MCP, memory and ``note_learning`` tools."""
        grants = self.grants(request, ceilings)
        box = self.toolbox(request, grants)
        schema = submit_schema(request.outputs, request.branches)
        tools = tuple(
            ToolSpec(name=d.name, description=d.description, parameters=d.parameters)
            for d in definitions_for(grants.tools)
        )
        tools += extra.specs() if extra is not None else ()
        tools += (
            ToolSpec(
                name=SUBMIT, description="Submit the node's outputs and finish.", parameters=schema
            ),
        )
        shell = ToolKind.SHELL in {kind_of(t) for t in grants.tools}
        session = request.session
        saved = session.load_state() if session is not None else None
        state = LoopState.from_json(unseal(request, saved)) if saved is not None else None
        resumed = state is not None
        if state is not None and extra is not None:
            extra.replay(state.messages)
        stored = saved is not None  # a state in the store must be cleared when we finish
        if state is None:
            # Only the shell can reach git (file tools refuse .git); bubblewrap stops it too,
            # and this catches the process backend.
            state = LoopState(
                messages=[Message(role="user", content=user or render_brief(request))],
                refs=git_refs(request.workspace) if shell else None,
            )
            yield Item(
                kind=ItemKind.NOTICE,
                data={
                    "text": "effective permissions for this attempt",
                    "permissions": grants.to_json(),
                    "sandbox": box.policy.sandbox.to_codex(),
                },
            )
        else:
            yield Item(
                kind=ItemKind.NOTICE,
                data={"text": "resumed from the saved conversation", "resumed": True},
            )
        spend = Spend(
            usage=state.usage, cost_known=state.cost_known, started=self.clock() - state.elapsed
        )
        routed = self.routed(request)
        backend = backend_for(box.policy.sandbox)
        if shell and not backend.is_boundary and not resumed:
            yield Item(kind=ItemKind.NOTICE, data={"sandbox": backend.name, "text": backend.note})
        if shell and not resumed and box.policy.sandbox.mode in GUARDED_MODES:
            yield Item(kind=ItemKind.NOTICE, data={
                "sandbox": backend.name, "fs_write": write_check_text(backend)})
        noted = False
        messages = state.messages

        def finish(failure: FailureClass | None, message: str | None, **kw: Any) -> AttemptResult:
            if session is not None and stored:
                session.save_state(None)
            moved = (
                moved_refs(state.refs, git_refs(request.workspace))
                if state.refs is not None
                else []
            )
            if moved:
                failure = FailureClass.PERMISSION_DENIED
                message = f"the attempt changed git refs ({', '.join(moved)}); workers never commit"
                kw = {}
            return AttemptResult(
                usage=spend.usage, routed=routed, failure=failure, message=message, **kw
            )

        pending = list(state.pending)
        announced = {c.id for c in pending}  # their tool_call items are in the trace already
        while True:
            if not pending:
                limit = limit_reached(request, spend, now=self.clock(), max_steps=self.max_steps)
                if limit is not None:
                    yield finish(*limit)
                    return
                try:
                    response = await self._call(request, messages, tools, spend, system)
                except ProviderError as exc:
                    failure = FailureClass(getattr(exc, "failure_class", "model_error"))
                    yield finish(failure, f"{exc.code}: {exc.message}")
                    return
                step_usage = Usage(
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                    cost_usd=response.cost_usd,
                    agent_steps=1,
                )
                if response.cost_usd is None and spend.cost_known:
                    spend.cost_known = False
                if (
                    response.cost_usd is None
                    and request.budget.max_cost_usd is not None
                    and not noted
                ):
                    noted = True
                    yield Item(
                        kind=ItemKind.NOTICE,
                        data={
                            "text": f"no price for model {response.model or self.model}: cost "
                            "is not accounted, so max_cost_usd is not enforced for this attempt"
                        },
                    )
                spend.usage = spend.usage + step_usage
                yield Item(kind=ItemKind.USAGE, data=usage_json(step_usage, response.model))
                messages.append(response.message)
                if response.message.content:
                    yield Item(
                        kind=ItemKind.MESSAGE,
                        data={"role": "assistant", "text": box.redact(response.message.content)},
                    )
                if not response.message.tool_calls:
                    if state.reminded:
                        yield finish(
                            FailureClass.OUTPUT_MISSING,
                            f"the model stopped twice without calling {SUBMIT}",
                        )
                        return
                    state.reminded = True
                    messages.append(
                        Message(role="user", content=f"Call `{SUBMIT}` with the outputs to finish.")
                    )
                    continue
                pending = list(response.message.tool_calls)
            call = pending[0]
            if call.id not in announced:
                announced.add(call.id)
                yield Item(
                    kind=ItemKind.TOOL_CALL,
                    data={
                        "id": call.id,
                        "name": call.name,
                        "arguments": json.loads(box.redact(json.dumps(dict(call.arguments)))),
                    },
                )
            if call.name == SUBMIT:
                problem = submission_problem(call, schema)
                if problem is None:
                    outputs = dict(call.arguments)
                    decision = outputs.pop("decision", None) if request.branches else None
                    yield Item(
                        kind=ItemKind.TOOL_RESULT,
                        data={"id": call.id, "ok": True, "content": "outputs received"},
                    )
                    yield finish(None, None, outputs=outputs, decision=decision)
                    return
                result_text, ok, refused = problem, False, False
            else:
                counted = extra is None or not extra.handles(call.name) or extra.counts(call.name)
                if (
                    counted
                    and request.budget.max_tool_calls is not None
                    and spend.usage.tool_calls >= request.budget.max_tool_calls
                ):
                    yield finish(
                        FailureClass.BUDGET_EXCEEDED,
                        f"max_tool_calls {request.budget.max_tool_calls} reached",
                    )
                    return
                outcome = await run_tool(request, box, call, extra, self.approver)
                if isinstance(outcome, Waiting):
                    state.pending = pending
                    state.usage = spend.usage
                    state.cost_known = spend.cost_known
                    state.elapsed = self.clock() - spend.started
                    if session is not None:
                        # Secrets are written as [secret:NAME] and put back on resume: the
                        # store never holds one, and the resumed call is the exact same call.
                        session.save_state(json.loads(box.redact(json.dumps(state.to_json()))))
                    raise WorkerPaused(
                        "approval",
                        outcome.approval_id,
                        {"approval_id": outcome.approval_id, "tool": call.name},
                    )
                if outcome is None:
                    yield finish(
                        FailureClass.PERMISSION_DENIED,
                        f"a person cancelled the attempt at tool call {call.name}",
                    )
                    return
                spend.usage = spend.usage + Usage(
                    input_tokens=0, output_tokens=0, cost_usd=0.0, tool_calls=int(counted)
                )
                result_text, ok, refused = outcome
                if extra is not None:
                    extra.observe(call.id, result_text, ok)
                if box.written_outside:
                    # The write happened (a command is checked after it ran): the attempt
                    # cannot succeed with it, whatever the model does next.
                    yield Item(kind=ItemKind.TOOL_RESULT, data={
                        "id": call.id, "ok": False, "refused": True, "content": result_text})
                    yield finish(FailureClass.PERMISSION_DENIED, written_outside_message(
                        box.written_outside, box.policy.permissions))
                    return
            pending.pop(0)
            yield Item(
                kind=ItemKind.TOOL_RESULT,
                data={"id": call.id, "ok": ok, "refused": refused, "content": result_text},
            )
            messages.append(
                Message(role="tool", tool_call_id=call.id, content=result_text, is_error=not ok)
            )

    async def _call(
        self,
        request: AttemptRequest,
        messages: list[Message],
        tools: tuple[ToolSpec, ...],
        spend: Spend,
        system: str = SYSTEM_PROMPT,
    ) -> ModelResponse:
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
            from rein.providers.errors import ProviderResponseError

            raise ProviderResponseError(
                f"{self.provider.name}: the stream ended without a response"
            )
        return final

