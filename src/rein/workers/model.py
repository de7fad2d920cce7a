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
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from rein.formats.canonical import canonical_json
from rein.profiles.policy import Policy
from rein.providers.base import Provider
from rein.providers.errors import ProviderError
from rein.providers.types import (
    Completed,
    Message,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolSpec,
)
from rein.tools.catalog import ToolCall, ToolKind, definitions_for, kind_of
from rein.tools.gate import ToolPolicy, Verdict
from rein.tools.gitguard import git_refs, moved_refs
from rein.tools.sandbox import SandboxPolicy, backend_for
from rein.tools.toolbox import Toolbox
from rein.workers.base import (
    TIERS,
    Answer,
    AttemptRequest,
    AttemptResult,
    FailureClass,
    Item,
    ItemKind,
    OutputSpec,
    Routed,
    Tier,
    Usage,
    WorkerPaused,
)
from rein.workers.conversation import LoopState
from rein.workers.grants import AttemptGrants, attempt_grants
from rein.workers.session_tools import SessionTools

SUBMIT = "submit_outputs"
DEFAULT_MAX_STEPS = 50

_TYPE_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "string": {"type": "string"},
    "text": {"type": "string"},
    "markdown": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "file": {"type": "string", "description": "workspace-relative path of the file"},
    "file_set": {"type": "array", "items": {"type": "string"}},
    "directory": {"type": "string", "description": "workspace-relative path of the directory"},
    "artifact": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    "reference": {"type": "string", "format": "uri"},
}

SYSTEM_PROMPT = """\
You are a worker inside rein, a harness that runs a plan one node at a time.
Do the task described by the user message using only the tools offered. Paths are relative
to the workspace. A tool call outside your permissions is refused with a message saying what
is allowed: adjust and continue. The harness checks your work itself; claiming success does
not make it so. When you are done, call `submit_outputs` exactly once with the declared
outputs. Do not commit to git."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalAsk:
    """A tool call waiting for a person. ``action_digest`` binds the answer to the exact call."""

    run_id: str
    node_id: str
    attempt: int
    tool: str
    arguments: Mapping[str, Any]
    permission: str
    message: str
    action_digest: str


Approver = Callable[[ApprovalAsk], Awaitable[Answer]]


def submit_schema(
    outputs: Iterable[OutputSpec], branches: Iterable[Mapping[str, str]] = ()
) -> dict[str, Any]:
    """The JSON Schema of ``submit_outputs``: the declared outputs (+ a decision enum)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    labels = [b["label"] for b in branches]
    if labels:
        properties["decision"] = {
            "type": "string",
            "enum": labels,
            "description": "the branch to take",
        }
        required.append("decision")
    for spec in outputs:
        schema = dict(spec.schema) if spec.schema else dict(_TYPE_SCHEMAS.get(spec.type, {}))
        schema["description"] = spec.description + (
            f" (path hint: {spec.path_hint})" if spec.path_hint else ""
        )
        properties[spec.name] = schema
        if spec.required:
            required.append(spec.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def render_brief(request: AttemptRequest) -> str:
    """The user message: the node's brief, inputs, outputs, permissions and feedback."""
    parts = [f"# {request.title}", request.brief.strip()]
    if request.inputs:
        parts.append(
            "## Inputs\n```json\n"
            + json.dumps(dict(request.inputs), indent=2, default=str)
            + "\n```"
        )
    if request.outputs:
        lines = [
            f"- `{o.name}` ({o.type}{', required' if o.required else ''}): {o.description}"
            for o in request.outputs
        ]
        parts.append("## Outputs to submit\n" + "\n".join(lines))
    if request.branches:
        lines = [f"- `{b['label']}`: {b.get('description', '')}" for b in request.branches]
        parts.append("## Decide one branch\n" + "\n".join(lines))
    parts.append(
        "## Permissions\n" + ("\n".join(f"- {p}" for p in request.permissions) or "(none)")
    )
    if request.feedback is not None:
        fb = request.feedback
        lines = [f"The previous attempt failed ({fb.failure_class.value}): {fb.summary}"]
        for c in fb.failed_criteria:
            lines.append(
                f"- {c.get('id', '?')}: {c.get('description', '')} — "
                f"evidence: {c.get('evidence', '')}"
            )
        parts.append("## Feedback\n" + "\n".join(lines))
    return "\n\n".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A tool call's approval is queued and unanswered: the attempt must pause."""

    approval_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class _Asked:
    """A session tool's ``ask``, shaped like a toolbox decision for :meth:`_answer`."""

    permission: str
    message: str


@dataclass(kw_only=True)
class _Spend:
    """What this attempt has used so far."""

    usage: Usage = field(default_factory=Usage)
    cost_known: bool = True
    started: float = 0.0


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
        state = LoopState.from_json(_unseal(request, saved)) if saved is not None else None
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
        spend = _Spend(
            usage=state.usage, cost_known=state.cost_known, started=self.clock() - state.elapsed
        )
        routed = self.routed(request)
        backend = backend_for(box.policy.sandbox)
        if shell and not backend.is_boundary and not resumed:
            yield Item(kind=ItemKind.NOTICE, data={"sandbox": backend.name, "text": backend.note})
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
                limit = self._limit_reached(request, spend)
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
                yield Item(kind=ItemKind.USAGE, data=_usage_json(step_usage, response.model))
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
                problem = _submission_problem(call, schema)
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
                outcome = await self._tool(request, box, call, extra)
                if isinstance(outcome, _Waiting):
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
        spend: _Spend,
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

    async def _tool(
        self,
        request: AttemptRequest,
        box: Toolbox,
        call: ModelToolCall,
        extra: SessionTools | None = None,
    ) -> tuple[str, bool, bool] | _Waiting | None:
        """(content, ok, refused) for the model; ``_Waiting`` while a person has not answered;
        None when a person cancelled."""
        if call.parse_error is not None:
            return (
                f"the arguments are not a JSON object ({call.parse_error}); send valid JSON",
                False,
                True,
            )
        if extra is not None and extra.handles(call.name):
            return await self._session_tool(request, box, call, extra)
        tool_call = ToolCall(id=call.id, name=call.name, arguments=call.arguments)
        decision = box.check(tool_call)
        approved = False
        if decision.verdict is Verdict.ASK:
            answer = await self._answer(request, box, call, decision)
            if isinstance(answer, (_Waiting, tuple)):
                return answer
            if answer == "cancel":
                return None
            if answer != "accept":
                return f"refused {decision.permission}: a person declined this call", False, True
            approved = True
        _, result = await box.run(tool_call, approved=approved)
        return result.content, result.ok, result.refused

    async def _session_tool(
        self, request: AttemptRequest, box: Toolbox, call: ModelToolCall, extra: SessionTools
    ) -> tuple[str, bool, bool] | _Waiting | None:
        """A profile session's own tool (MCP, memory, note_learning): the effective profile
        decides, and an ``ask`` takes the same path as a built-in tool's."""
        verdict, label = extra.check(call.name)
        if verdict == "deny":
            return label, False, True
        approved = False
        if verdict == "ask":
            asked = _Asked(permission=label, message=f"{label} needs a person's approval")
            answer = await self._answer(request, box, call, asked)
            if isinstance(answer, (_Waiting, tuple)):
                return answer
            if answer == "cancel":
                return None
            if answer != "accept":
                return f"refused {label}: a person declined this call", False, True
            approved = True
        out = await extra.run(call.id, call.name, call.arguments, approved=approved)
        return box.redact(out.content), out.ok, out.refused

    async def _answer(
        self, request: AttemptRequest, box: Toolbox, call: ModelToolCall, decision: Any
    ) -> Answer | _Waiting | tuple[str, bool, bool]:
        """A person's answer to a call in ``ask``: from the run's approval queue when the
        engine offers one, else from the approver, else the call is treated as denied."""
        digest = action_digest(call)
        if request.session is not None:
            shown = json.loads(box.redact(json.dumps(dict(call.arguments))))
            approval_id, answer = await request.session.ask(
                digest,
                {
                    "tool": call.name,
                    "arguments": shown,
                    "permission": decision.permission,
                    "action_digest": digest,
                    "prompt": f"{call.name} {json.dumps(shown, sort_keys=True)[:300]}",
                },
            )
            return _Waiting(approval_id) if answer is None else answer
        if self.approver is None:
            refusal = (
                f"refused {decision.permission}: it needs a person's approval and this run "
                "has no approval channel for tool calls, so it is treated as denied"
            )
            return refusal, False, True
        return await self.approver(
            ApprovalAsk(
                run_id=request.run_id,
                node_id=request.node_id,
                attempt=request.attempt,
                tool=call.name,
                arguments=call.arguments,
                permission=decision.permission,
                message=decision.message or "",
                action_digest=digest,
            )
        )

    def _limit_reached(
        self, request: AttemptRequest, spend: _Spend
    ) -> tuple[FailureClass, str] | None:
        b = request.budget
        u = spend.usage
        steps = b.max_agent_steps or request.constraints.get("max_agent_steps") or self.max_steps
        if u.agent_steps >= steps:
            return FailureClass.TIMEOUT, f"max_agent_steps {steps} reached"
        checks = (
            ("max_input_tokens", b.max_input_tokens, u.input_tokens),
            ("max_output_tokens", b.max_output_tokens, u.output_tokens),
            ("max_total_tokens", b.max_total_tokens, u.total_tokens),
        )
        for name, limit, used in checks:
            if limit is not None and used is not None and used >= limit:
                return FailureClass.BUDGET_EXCEEDED, f"{name} {limit} reached ({used})"
        if b.max_cost_usd is not None and spend.cost_known and (u.cost_usd or 0) >= b.max_cost_usd:
            return (
                FailureClass.BUDGET_EXCEEDED,
                f"max_cost_usd {b.max_cost_usd} reached ({round(u.cost_usd or 0, 6)})",
            )
        elapsed = self.clock() - spend.started
        if b.max_wall_clock_seconds is not None and elapsed >= b.max_wall_clock_seconds:
            return (
                FailureClass.TIMEOUT,
                f"max_wall_clock_seconds {b.max_wall_clock_seconds} reached",
            )
        return None


def _unseal(request: AttemptRequest, saved: Mapping[str, Any]) -> Mapping[str, Any]:
    """A saved state with the node's secrets put back where they were redacted."""
    text = json.dumps(dict(saved))
    for name in request.secret_names:
        value = request.env.get(name)
        if value:
            text = text.replace(f"[secret:{name}]", json.dumps(value)[1:-1])
    return dict(json.loads(text))


def action_digest(call: ModelToolCall) -> str:
    """``sha256:`` + hex of the canonical JSON of the exact call (tool and arguments)."""
    action = {"tool": call.name, "arguments": dict(call.arguments)}
    return "sha256:" + hashlib.sha256(canonical_json(action)).hexdigest()


def _submission_problem(call: ModelToolCall, schema: Mapping[str, Any]) -> str | None:
    if call.parse_error is not None:
        return f"{SUBMIT}: the arguments are not a JSON object ({call.parse_error})"
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(dict(call.arguments)),
        key=lambda e: list(e.absolute_path),
    )
    if not errors:
        return None
    lines = [
        f"- {'/'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}"
        for e in errors[:10]
    ]
    return f"{SUBMIT} was not accepted; fix these and call it again:\n" + "\n".join(lines)


def _usage_json(usage: Usage, model: str) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd,
        "model": model,
    }


def model_workers(
    config: Mapping[str, Any],
    *,
    registry: Any = None,
    http_client: Any = None,
    approver: Approver | None = None,
) -> tuple[ModelWorker, ...]:
    """One model worker per ``[tiers.<tier>]`` route of a merged rein.toml, in tier order.

    Each route names a ``provider`` (a ``[providers.NAME]`` table) and a ``model``; the worker
    serves only that tier. No ``[tiers]`` table means no model workers (the driver is the
    default). An unknown provider name is ConfigError PROVCFG005.
    """
    from rein.errors import ConfigError
    from rein.providers.base import default_registry
    from rein.providers.config import parse_providers

    providers = parse_providers(config.get("providers"))
    registry = registry or default_registry()
    built: dict[str, Provider] = {}
    workers: list[ModelWorker] = []
    tiers = config.get("tiers") or {}
    for tier in TIERS:
        route = tiers.get(tier)
        if not isinstance(route, Mapping) or not route.get("model"):
            continue
        name = str(route.get("provider", ""))
        if name not in providers:
            known = ", ".join(sorted(providers)) or "(none)"
            raise ConfigError(
                f"tiers.{tier}.provider {name!r} has no [providers.{name}] table",
                code="PROVCFG005",
                hint=f"configured providers: {known}",
            )
        if name not in built:
            built[name] = registry.create(providers[name], http_client=http_client)
        stream = bool(providers[name].options.get("stream", False))
        workers.append(
            ModelWorker(
                provider=built[name],
                model=str(route["model"]),
                tiers=(tier,),
                stream=stream,
                approver=approver,
            )
        )
    return tuple(workers)
