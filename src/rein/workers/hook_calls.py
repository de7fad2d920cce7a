"""Where the model worker calls the lifecycle hooks: a node attempt is one session.

``SessionStart`` fires when an attempt starts fresh (``source: "startup"``; a retry is a new
attempt, so a new session), ``SessionEnd`` when it ends, whatever the outcome (``reason``:
``completed`` or the failure class). A pause for a person's approval neither ends nor starts
the session: the attempt resumes where it stood, and a call whose ``PreToolUse`` chain ran
before the pause is not hooked again. ``PreToolUse`` runs before rein's permission check,
so a rewritten call is checked as rewritten; ``PostToolUse`` runs once a tool has run
(never for a call that was refused, blocked or skipped). ``PreCompact`` runs before the
conversation is compacted (:mod:`rein.workers.compaction`).

:func:`attempt_hooks` builds the attempt's :class:`~rein.tools.hooks.HookRunner`: the
``rein.toml`` hooks that name events, then the ones the attempt's OAP profile binds
(``lifecycle.on_start`` → ``SessionStart``, ``on_end`` → ``SessionEnd``). Its sink turns each
run into a :class:`~rein.workers.model_steps.HookRan` step; the engine records those as
``hook/started`` and ``hook/completed`` events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.config import HookSpec
from rein.core.frozen import Frozen
from rein.providers.types import Message, ModelToolCall
from rein.tools.hooks import ChainOutcome, Hook, HookRunner, from_spec
from rein.tools.toolbox import Toolbox
from rein.workers import hook_transcript
from rein.workers.base import AttemptRequest
from rein.workers.model_steps import HookRan, Step

_PROFILE_EVENTS = {"on_start": "SessionStart", "on_end": "SessionEnd"}


def profile_hooks(bindings: Iterable[Any], specs: Mapping[str, HookSpec], profile: str
                  ) -> tuple[Hook, ...]:
    """The hooks an OAP profile binds by name (its ``lifecycle``), with their ``with``."""
    out = []
    for binding in bindings:
        spec = specs.get(binding.name)
        event = _PROFILE_EVENTS.get(binding.event)
        if spec is not None and event is not None:
            out.append(from_spec(spec, (event,), params=dict(binding.params),
                                 source=f"profile {profile}"))
    return tuple(out)


def attempt_hooks(request: AttemptRequest, box: Toolbox, hooks: Sequence[Hook],
                  steps: list[Step],
                  messages: Callable[[], Sequence[Message]] | None = None
                  ) -> HookRunner | None:
    """The attempt's hook runner (None without hooks): each run it makes is appended to
    ``steps`` as it starts and ends, redacted. ``messages`` gives the conversation so far,
    written as the transcript every hook input names (``transcript_path``)."""
    if not hooks:
        return None

    def redact(value: Any) -> Any:
        return json.loads(box.redact(json.dumps(value)))

    def sink(kind: str, data: Mapping[str, Any]) -> None:
        steps.append(HookRan(started=kind == "started", data=dict(data)))

    session = session_id(request)
    transcript = None if messages is None else hook_transcript.writer(
        hook_transcript.transcript_file(Path(request.workspace), request.run_id,
                                        request.node_id, request.attempt),
        messages, session_id=session, cwd=str(request.workspace), redact=box.redact)
    return HookRunner(hooks, cwd=Path(request.workspace), session_id=session,
                      sink=sink, redact=redact, transcript=transcript,
                      extra_input={"rein_run_id": request.run_id,
                                   "rein_node_id": request.node_id,
                                   "rein_attempt": request.attempt})


def session_id(request: AttemptRequest) -> str:
    """A node attempt is a session: ``<run>/<node>#<attempt>``, as the protocol item id."""
    return f"{request.run_id}/{request.node_id}#{request.attempt}"


class PreTool(Frozen):
    """What the ``PreToolUse`` chain decided about one call."""

    call: ModelToolCall  # as rewritten, or as the model made it
    blocked: str | None = None
    stop: str | None = None
    by: str | None = None  # the hook that blocked, stopped or skipped it
    skip: str | None = None
    ask: bool = False
    context: str = ""


def pre_tool(call: ModelToolCall, chain: ChainOutcome) -> PreTool:
    """The call after its chain: blocked, stopped, skipped, or rewritten (and maybe asked)."""
    if chain.stop is not None:
        return PreTool(call=call, stop=chain.stop, by=chain.blocked_by)
    if chain.blocked is not None:
        return PreTool(call=call, blocked=chain.blocked, by=chain.blocked_by,
                       context=chain.context_text)
    if chain.skip is not None:
        return PreTool(call=call, skip=chain.skip, by=chain.skipped_by,
                       context=chain.context_text)
    if chain.tool_input is not None:
        call = ModelToolCall(id=call.id, name=call.name, arguments=dict(chain.tool_input),
                             raw_arguments=json.dumps(dict(chain.tool_input)))
    return PreTool(call=call, ask=chain.ask, context=chain.context_text)


def with_context(content: str, context: str) -> str:
    """A tool result with what hooks added for the model, marked as coming from hooks."""
    if not context:
        return content
    return f"{content}\n\n[context from hooks]\n{context}"


def opening_context(messages: list[Message], context: str, at: int = 0) -> None:
    """``SessionStart`` context joins the brief (message ``at``: the first, unless earlier
    turns of a conversation come before it), marked as such."""
    if context and len(messages) > at and messages[at].role == "user":
        first = messages[at]
        messages[at] = Message(role="user", content=with_context(first.content, context))


def tool_response(content: str, ok: bool) -> dict[str, Any]:
    """``tool_response`` of ``PostToolUse``: what the tool returned to the model."""
    return {"content": content, "ok": ok}
