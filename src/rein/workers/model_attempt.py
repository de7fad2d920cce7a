"""One model attempt, step by step: a model turn, the tool calls it decided, their results.

:class:`ModelAttempt` holds where the attempt stands (the conversation, what was spent, the
calls not yet run) and makes one kind of step per method; :func:`steps` is the loop over
them, yielding the typed records of :mod:`rein.workers.model_steps` until one of them ends
the attempt (``Finished``) or pauses it (``Paused``, the conversation saved in the store).

Before every model call the budget is checked (:func:`~rein.workers.spend.limit_reached`);
before every counted tool call, ``max_tool_calls``; every tool call goes through
:func:`~rein.workers.tool_calls.run_tool` (permissions, sandbox, ``ask``). A write outside the
granted paths ends the attempt as ``permission_denied`` whatever the model does next, and so
does a git ref the attempt moved. Text that reaches a record or the store is redacted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from rein.core.failures import FailureClass
from rein.core.frozen import Record, field
from rein.core.usage import Usage
from rein.errors import ProviderError
from rein.providers.types import Message, ModelResponse, ModelToolCall, ToolSpec
from rein.tools.gitguard import moved_refs, refs_now
from rein.tools.hooks import HookRunner
from rein.tools.shell import written_outside_message
from rein.tools.toolbox import Toolbox
from rein.workers.base import AttemptRequest, AttemptResult, Routed, Steerable
from rein.workers.brief import SUBMIT, submission_problem
from rein.workers.compaction import SUMMARY_REQUEST, compacted, due, pre_compact, record
from rein.workers.conversation import LoopState
from rein.workers.hook_calls import PreTool, opening_context, pre_tool, tool_response, with_context
from rein.workers.model_steps import (
    Compacted,
    Finished,
    HookPrompt,
    HookRan,
    ModelTurn,
    Noted,
    Paused,
    Step,
    ToolDecided,
    ToolReturned,
)
from rein.workers.session_tools import SessionTools
from rein.workers.spend import Spend, call_usage, limit_reached
from rein.workers.tool_calls import Approver, Waiting, run_tool

#: Asks the model for its next answer: (messages, tools, what was spent) -> its response.
Complete = Callable[[list[Message], tuple[ToolSpec, ...], Spend], Awaitable[ModelResponse]]


class ModelAttempt(Record, eq=False):
    """Where one attempt stands, and the steps that move it on."""

    request: AttemptRequest
    box: Toolbox
    tools: tuple[ToolSpec, ...]  # what the model is offered, ``submit_outputs`` last
    schema: dict[str, Any]  # the ``submit_outputs`` arguments
    state: LoopState
    spend: Spend
    routed: Routed
    complete: Complete
    model: str  # the configured model, named when the vendor gives no price
    clock: Callable[[], float]
    max_steps: int
    extra: SessionTools | None = None
    approver: Approver | None = None
    hooks: HookRunner | None = None  # the session's lifecycle hooks (rein.tools.hooks)
    hook_steps: list[Step] = field(default_factory=list)  # what the hooks ran, not yet yielded
    context_tokens: int | None = None  # the model's context window, when the route declares it
    last_input: int | None = None  # input tokens of the last model turn
    compactions: int = 0
    stored: bool = False  # a saved state is in the store and must be cleared at the end
    pending: list[ModelToolCall] = field(default_factory=list)
    announced: set[str] = field(default_factory=set)  # calls whose record is in the trace
    priced_note: bool = False  # the "no price" notice was given
    usage_note: bool = False  # the "no token usage" notice was given
    # A fresh attempt that may run commands: its git refs are read as it starts (awaited,
    # by the worker's loop) and compared when it ends (refs_checked).
    watches_git: bool = False

    def __post_init__(self) -> None:
        self.pending = list(self.state.pending)
        self.announced = {c.id for c in self.pending}

    async def model_turn(self) -> list[Step]:
        """Check the limits, ask the model, and take its answer: the records of this turn;
        the last one is ``Finished`` when the attempt ends here."""
        request, spend = self.request, self.spend
        limit = limit_reached(request, spend, now=self.clock(), max_steps=self.max_steps)
        if limit is not None:
            return [self.finish(*limit)]
        self.take_steered()
        out: list[Step] = []
        if due(self.context_tokens, self.last_input, self.state.messages):
            out += await self.compact()
            # The summary was a model call: the limits are checked again before the next.
            limit = limit_reached(request, spend, now=self.clock(), max_steps=self.max_steps)
            if limit is not None:
                return [*out, self.finish(*limit)]
        try:
            response = await self.complete(self.state.messages, self.tools, spend)
        except ProviderError as exc:
            failure = FailureClass(getattr(exc, "failure_class", "model_error"))
            return [*out, self.finish(failure, f"{exc.code}: {exc.message}")]
        step_usage = call_usage(response)
        self.last_input = step_usage.input_tokens
        if response.cost_usd is None:
            spend.cost_known = False
        if not response.usage.reported:
            if not self.usage_note:
                self.usage_note = True
                out.append(Noted(data={
                    "text": f"model {response.model or self.model} reported no token usage: "
                            "tokens and cost are not accounted, so the attempt's token and "
                            "cost budgets are not enforced"}))
        elif (response.cost_usd is None and request.budget.max_cost_usd is not None
              and not self.priced_note):
            self.priced_note = True
            out.append(Noted(data={
                "text": f"no price for model {response.model or self.model}: cost is not "
                        "accounted, so max_cost_usd is not enforced for this attempt"}))
        spend.usage = spend.usage + step_usage
        message = response.message
        self.state.messages.append(message)
        out.append(ModelTurn(usage=step_usage, model=response.model,
                             text=self.box.redact(message.content) if message.content else "",
                             tool_calls=len(message.tool_calls),
                             reasoning=self.box.redact(response.reasoning)
                             if response.reasoning else ""))
        if message.tool_calls:
            self.pending = list(message.tool_calls)
        elif self.state.reminded:
            out.append(self.finish(FailureClass.OUTPUT_MISSING,
                                   f"the model stopped twice without calling {SUBMIT}"))
        else:
            self.state.reminded = True
            self.state.messages.append(
                Message(role="user", content=f"Call `{SUBMIT}` with the outputs to finish."))
        return out

    def unread_steered(self) -> bool:
        """Whether input added while the attempt ran (``turn/steer``) waits to be read."""
        session = self.request.session
        return isinstance(session, Steerable) and \
            len(session.steered()) > self.state.steered

    def take_steered(self) -> None:
        """Input a person added while the attempt ran (``turn/steer``): the model reads it
        in this turn, after what it has seen so far; the count read is saved with the state,
        so a resumed attempt never reads one twice."""
        session = self.request.session
        if not isinstance(session, Steerable):
            return
        added = list(session.steered())[self.state.steered:]
        for text in added:
            self.state.messages.append(Message(role="user", content=text))
        self.state.steered += len(added)

    def decided(self, call: ModelToolCall) -> ToolDecided | None:
        """The record of the model's decision to make ``call``, once per call (a call that
        paused and resumed is in the trace already)."""
        if call.id in self.announced:
            return None
        self.announced.add(call.id)
        shown = json.loads(self.box.redact(json.dumps(dict(call.arguments))))
        return ToolDecided(id=call.id, name=call.name, arguments=shown)

    async def tool_step(self, call: ModelToolCall) -> list[Step]:
        """Run the next pending call: its result, and ``Finished`` or ``Paused`` when the
        attempt ends or waits here."""
        if call.name == SUBMIT:
            if self.unread_steered():
                # The person added input while the model worked: it answers that first.
                return self.answered(call, f"Not submitted: the user added to the request "
                                     f"while you worked; read it, then call `{SUBMIT}` again.",
                                     ok=False, refused=False)
            problem = submission_problem(call, self.schema)
            if problem is None:
                outputs = dict(call.arguments)
                decision = outputs.pop("decision", None) if self.request.branches else None
                return [ToolReturned(id=call.id, ok=True, content="outputs received"),
                        self.finish(None, None, outputs=outputs, decision=decision)]
            return self.answered(call, problem, ok=False, refused=False)
        extra, budget = self.extra, self.request.budget
        counted = extra is None or not extra.handles(call.name) or extra.counts(call.name)
        limit = budget.max_tool_calls
        if counted and limit is not None and self.spend.usage.tool_calls >= limit:
            return [self.finish(FailureClass.BUDGET_EXCEEDED, f"max_tool_calls {limit} reached")]
        pre = await self.pre_tool(call)
        if pre is not None and (pre.stop, pre.blocked, pre.skip) != (None, None, None):
            return self.took_hooks(self.hooked_call(call, pre))
        if pre is not None:
            call = pre.call
        outcome = await run_tool(self.request, self.box, call, extra, self.approver,
                                 ask=pre is not None and pre.ask)
        if isinstance(outcome, Waiting):
            ran = self.took_hooks([])  # before the save: the record keeps these runs
            return [*ran, self.pause(outcome.approval_id, call.name)]
        if outcome is None:
            return self.took_hooks([self.finish(
                FailureClass.PERMISSION_DENIED,
                f"a person cancelled the attempt at tool call {call.name}")])
        self.spend.usage = self.spend.usage + Usage(
            input_tokens=0, output_tokens=0, cost_usd=0.0, tool_calls=int(counted))
        content, ok, refused = outcome
        stop: str | None = None
        if not refused:
            content, ok, stop = await self.post_tool(call, content, ok)
        content = with_context(content, self.box.redact(pre.context) if pre else "")
        if stop is not None:
            return self.took_hooks([*self.answered(call, content, ok=ok, refused=refused),
                                    self.finish(FailureClass.PERMISSION_DENIED, stop)])
        if extra is not None:
            extra.observe(call.id, content, ok)
        if self.box.written_outside:
            # The write happened (a command is checked after it ran): the attempt cannot
            # succeed with it, whatever the model does next.
            return self.took_hooks([
                ToolReturned(id=call.id, ok=False, refused=True, content=content),
                self.finish(FailureClass.PERMISSION_DENIED, written_outside_message(
                    self.box.written_outside, self.box.policy.permissions))])
        return self.took_hooks(self.answered(call, content, ok=ok, refused=refused))

    def answered(self, call: ModelToolCall, content: str, *, ok: bool,
                 refused: bool, hook: str | None = None) -> list[Step]:
        """The call is done: the model reads its result in the next turn."""
        self.pending.pop(0)
        self.state.messages.append(
            Message(role="tool", tool_call_id=call.id, content=content, is_error=not ok))
        return [ToolReturned(id=call.id, ok=ok, refused=refused, content=content, hook=hook)]

    async def compact(self) -> list[Step]:
        """Replace the conversation by the model's summary of it (rein.workers.compaction),
        unless a ``PreCompact`` hook blocks it or the summary cannot be had."""
        trigger, self.last_input = self.last_input or 0, None  # the next turn decides again
        blocked, by = await pre_compact(self.hooks)
        if blocked is not None:
            return self.took_hooks([Noted(data={
                "text": f"compaction blocked by hook {by}: {self.box.redact(blocked)}"})])
        asking = [*self.state.messages, Message(role="user", content=SUMMARY_REQUEST)]
        try:
            response = await self.complete(asking, (), self.spend)
        except ProviderError as exc:
            return self.took_hooks([Noted(data={
                "text": f"compaction failed ({exc.code}); the conversation is kept"})])
        used = call_usage(response)
        self.spend.usage = self.spend.usage + used
        if response.cost_usd is None:
            self.spend.cost_known = False
        summary = response.message.content.strip()
        turn = ModelTurn(usage=used, model=response.model, text="", tool_calls=0)
        if not summary:
            return self.took_hooks([turn, Noted(data={
                "text": "compaction failed (the summary was empty); the conversation is kept"})])
        replaced = list(self.state.messages)
        self.state.messages[:] = compacted(replaced, summary, self.state.opening)
        self.state.opening = 0
        self.compactions += 1
        assert self.context_tokens is not None
        item = record(self.compactions, replaced, summary,
                      last_input=trigger,
                      context_tokens=self.context_tokens, redact=self.box.redact)
        return self.took_hooks([turn, Compacted(data=item)])

    # -- lifecycle hooks (rein.workers.hook_calls says which boundary fires which event) ----

    def took_hooks(self, steps: list[Step]) -> list[Step]:
        """``steps`` after the hook runs that led to them; each ended run is kept for the
        attempt's record."""
        ran = list(self.hook_steps)
        self.hook_steps.clear()  # the runner's sink appends to this very list
        for step in ran:
            if isinstance(step, HookRan) and not step.started:
                self.state.hook_runs.append({k: v for k, v in step.data.items()
                                             if k not in ("input", "output")})
        return [*ran, *steps]

    async def session_start(self) -> list[Step]:
        """``SessionStart`` of a fresh attempt: its context joins the brief."""
        if self.hooks is None:
            return []
        chain = await self.hooks.run("SessionStart", {"source": "startup"})
        if chain.stop is not None:
            return self.took_hooks([self.finish(
                FailureClass.PERMISSION_DENIED,
                f"hook {chain.blocked_by} stopped the session: {chain.stop}")])
        context = self.box.redact(chain.context_text)
        opening_context(self.state.messages, context, self.state.opening)
        return self.took_hooks([HookPrompt(text=context)] if context else [])

    async def session_end(self, finished: Finished) -> list[Step]:
        """``SessionEnd``, then the attempt's result with every hook run in its record."""
        if self.hooks is None:
            return [finished]
        failure = finished.result.failure
        await self.hooks.run("SessionEnd", {"reason": "completed" if failure is None
                                            else str(failure.value)})
        out = self.took_hooks([])
        extra = {**finished.result.extra, "x-rein-hooks": list(self.state.hook_runs)}
        return [*out, Finished(result=finished.result.replace(extra=extra))]

    async def pre_tool(self, call: ModelToolCall) -> PreTool | None:
        """The ``PreToolUse`` chain of ``call`` (once: a call resumed after a pause keeps
        what its chain decided); a rewrite replaces the pending call and is recorded."""
        if self.hooks is None or call.parse_error is not None:
            return None
        done = self.state.hooked.get(call.id)
        if done is not None:
            return PreTool(call=call, ask=bool(done.get("ask")),
                           context=str(done.get("context") or ""))
        chain = await self.hooks.run("PreToolUse", {
            "tool_name": call.name, "tool_input": dict(call.arguments), "tool_use_id": call.id,
        }, tool=call.name)
        pre = pre_tool(call, chain)
        if pre.call is not call:
            self.pending[0] = pre.call
            shown = json.loads(self.box.redact(json.dumps(dict(pre.call.arguments))))
            self.hook_steps.append(Noted(data={
                "text": f"hooks rewrote tool call {call.id}; rein checks it as rewritten",
                "id": call.id, "arguments": shown}))
        self.state.hooked[call.id] = {"ask": pre.ask, "context": pre.context}
        return pre

    def hooked_call(self, call: ModelToolCall, pre: PreTool) -> list[Step]:
        """A call a hook stopped, blocked or skipped: the model reads why (or the result the
        hook supplies); the tool does not run."""
        if pre.stop is not None:
            return [self.finish(FailureClass.PERMISSION_DENIED,
                                f"hook {pre.by} stopped the session: {pre.stop}")]
        context = self.box.redact(pre.context)
        if pre.blocked is not None:
            text = f"blocked by hook {pre.by}: {self.box.redact(pre.blocked)}"
            return self.answered(call, with_context(text, context), ok=False, refused=True,
                                 hook=pre.by)
        assert pre.skip is not None
        return self.answered(call, with_context(self.box.redact(pre.skip), context), ok=True,
                             refused=False, hook=pre.by)

    async def post_tool(self, call: ModelToolCall, content: str, ok: bool
                        ) -> tuple[str, bool, str | None]:
        """The ``PostToolUse`` chain of a call that ran: the result the model reads, whether
        it reads as ok, and why the session must stop (None: it goes on)."""
        if self.hooks is None:
            return content, ok, None
        chain = await self.hooks.run("PostToolUse", {
            "tool_name": call.name, "tool_input": dict(call.arguments), "tool_use_id": call.id,
            "tool_response": tool_response(content, ok),
        }, tool=call.name)
        if chain.tool_output is not None:
            content = self.box.redact(chain.tool_output)
        if chain.blocked is not None:  # the tool ran: the reason is feedback, not a refusal
            reason = self.box.redact(chain.blocked)
            content, ok = f"{content}\n\n[hook {chain.blocked_by}] {reason}", False
        content = with_context(content, self.box.redact(chain.context_text))
        stop = None if chain.stop is None else \
            f"hook {chain.blocked_by} stopped the session: {chain.stop}"
        return content, ok, stop

    def pause(self, approval_id: str, tool: str) -> Paused:
        """Save the conversation (the call waiting is still pending) and pause."""
        state, spend = self.state, self.spend
        state.pending = self.pending
        state.usage = spend.usage
        state.cost_known = spend.cost_known
        state.elapsed = self.clock() - spend.started
        if self.request.session is not None:
            # Secrets are written as [secret:NAME] and put back on resume: the store never
            # holds one, and the resumed call is the exact same call.
            self.request.session.save_state(json.loads(self.box.redact(json.dumps(
                state.to_json()))))
        return Paused(approval_id=approval_id, tool=tool)

    def finish(self, failure: FailureClass | None, message: str | None,
               **kw: Any) -> Finished:
        """The attempt's result (:meth:`refs_checked` holds it to the git refs)."""
        if self.request.session is not None and self.stored:
            self.request.session.save_state(None)
        return Finished(result=AttemptResult(usage=self.spend.usage, routed=self.routed,
                                             failure=failure, message=message, **kw))

    async def refs_checked(self, finished: Finished) -> Finished:
        """``finished``, unless the attempt moved a git ref: then it fails whatever it
        claims (the refs read again awaited, as they were at the start)."""
        refs = self.state.refs
        if refs is None:
            return finished
        moved = moved_refs(refs, await refs_now(self.request.workspace))
        if not moved:
            return finished
        return Finished(result=AttemptResult(
            usage=self.spend.usage, routed=self.routed, failure=FailureClass.PERMISSION_DENIED,
            message=f"the attempt changed git refs ({', '.join(moved)}); workers never commit"))


async def steps(attempt: ModelAttempt, *, fresh: bool = True) -> AsyncIterator[Step]:
    """The agent loop: model turns and the tool calls they decide, until one step ends or
    pauses the attempt. ``fresh``: the attempt starts here (not resumed from a pause), so
    its session starts too."""
    if fresh:
        for step in await attempt.session_start():
            if isinstance(step, Finished):
                for end in await attempt.session_end(await attempt.refs_checked(step)):
                    yield end
                return
            yield step
    while True:
        if attempt.pending:
            call = attempt.pending[0]
            decided = attempt.decided(call)
            if decided is not None:
                yield decided
            batch = await attempt.tool_step(call)
        else:
            batch = await attempt.model_turn()
        for step in batch:
            if isinstance(step, Finished):
                for end in await attempt.session_end(await attempt.refs_checked(step)):
                    yield end
                return
            yield step
            if isinstance(step, Paused):
                return
