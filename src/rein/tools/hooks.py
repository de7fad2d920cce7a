"""Lifecycle hooks: commands that see a session's events and may block, rewrite or add to them.

A :class:`HookRunner` is given the hooks in force (from ``rein.toml``, and the ones an OAP
profile binds by name) and a sink, and runs the chain of one event: :meth:`HookRunner.run`.
Each hook is a process spoken to in the Claude Code wire format (:mod:`rein.tools.hook_wire`),
started in its own process group and killed with the group after its timeout
(:func:`rein.tools.process.run_process`). The session runtime, the model worker and any other
surface call the same runner; what they do with its :class:`ChainOutcome` is theirs.

The chain semantics, one event at a time, hooks in the order they are configured:

- every hook whose events and matcher select the event runs, even after a block, so a logger
  after a blocker still sees the call;
- a **block** wins: it discards every rewrite and skip, and its reason is what the model
  reads as the tool's result (never a silent cancel); the first block's reason is kept;
- **rewrites** apply in order: each hook reads the input as rewritten so far, and the last
  ``updatedInput`` (``updatedToolOutput``) is the one used. The caller checks permissions
  *after* the rewrite, so a hook cannot widen a call;
- ``additionalContext`` accumulates, in order;
- ``ask`` (or ``defer``) from any hook sends the call to the approval queue (it never skips
  one: ``allow`` does not bypass rein's permission check);
- a **skip** (``skipResult``) means: do not run the tool, and give the model this result
  instead. It is explicit, recorded as the hook's outcome, and loses to a block;
- a hook whose workspace files (its script) changed since the configuration was read and
  trusted is **not run**: its run is a block that stops the session, naming the files;
- a hook with workspace files runs from **copies of the bytes compared** with the trusted
  digests, so a script rewritten in the instant after the comparison is not what runs
  (:mod:`rein.config.command_seal`, which says what changes for the script: its ``$0``).

A hook that speaks Claude Code (``format = "claude"``, or a matcher that selects the call by
its Claude Code name, ``Bash`` for ``shell``) is shown the call as Claude Code shows it
(:mod:`rein.tools.claude_tools`): ``tool_name`` ``Bash``, ``tool_input`` with
``file_path`` and ``old_string``; its ``updatedInput`` is read back the same way. The chain
itself carries rein's arguments. Every input names ``transcript_path``, a JSON-lines
transcript of the session so far, when the caller keeps one.

The sink hears ``started`` and ``completed`` for every run, live, with redacted data: a
secret the hook was handed never reaches a record. With no hooks configured, :meth:`run`
returns a shared empty outcome without spawning anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from rein.config import Config, HookSpec
from rein.config.command_seal import sealed_command
from rein.core.frozen import Frozen, Record, field
from rein.formats.redaction import DEFAULT_KEY_VARIABLES, SECRET_PREFIX
from rein.tools.catalog import ALIASES, kind_of
from rein.tools.claude_tools import claude_name, from_claude, to_claude
from rein.tools.hook_wire import HOOK_EVENTS, TOOL_EVENTS, HookAnswer, interpret, matches
from rein.tools.process import run_process

__all__ = ["HOOK_EVENTS", "ChainOutcome", "Hook", "HookRun", "HookRunner", "HookSink",
           "configured_hooks", "from_spec", "hook_env"]

#: Hears each hook run as it starts and as it ends: ("started" | "completed", data).
HookSink = Callable[[Literal["started", "completed"], Mapping[str, Any]], None]
#: Writes the session's transcript so far and returns its path (``transcript_path``).
Transcript = Callable[[], str | None]
Redact = Callable[[Any], Any]

# How much of a hook's stdout the record keeps: the answer is small; a chatty hook is not.
_RECORDED_OUTPUT = 4000
_KEY_VARIABLES = frozenset(DEFAULT_KEY_VARIABLES.values())


class Hook(Frozen):
    """One configured hook: a command, the events it hears, and which tools it matches."""

    name: str
    command: str | tuple[str, ...]  # a string runs through /bin/sh -c; a tuple is an argv
    events: tuple[str, ...]
    matcher: str | None = None  # tool events only: see hook_wire.matches
    timeout_seconds: float = 30.0
    source: str = ""  # the rein.toml that defines it, or the profile that binds it
    params: Mapping[str, str] = field(default_factory=dict)  # a profile's ``with``
    fail_closed: bool = False  # a failed run (crash, timeout) blocks instead of passing
    # The workspace files the command runs, with their digests as trusted (or read): a hook
    # whose files differ is never run (rein.config.command_files).
    files: Mapping[str, str] = field(default_factory=dict)
    # "claude": Claude Code's tool names and argument shapes; "rein": rein's; None: Claude
    # Code's for a call the matcher selects by its Claude Code name only.
    format: str | None = None

    def selects(self, event: str, tool: str | None) -> bool:
        """Whether this hook runs for ``event`` on ``tool``. A built-in tool answers to each
        of its spellings (``file_write`` and ``write``): a guard cannot be bypassed by an
        alias."""
        if event not in self.events:
            return False
        if event not in TOOL_EVENTS or tool is None:
            return True
        return any(matches(self.matcher, name) for name in spellings(tool))

    def speaks_claude(self, tool: str) -> bool:
        """Whether this hook is shown a call to ``tool`` in Claude Code's shape."""
        if self.format is not None:
            return self.format == "claude"
        if self.matcher in (None, "", "*") or claude_name(tool) == tool:
            return False
        ours = (name for name in spellings(tool) if name != claude_name(tool))
        return matches(self.matcher, claude_name(tool)) and not any(
            matches(self.matcher, name) for name in ours)


class HookRun(Frozen):
    """The record of one hook run, as the trace and the run record keep it."""

    id: str
    hook: str
    event: str
    status: str  # completed | failed | blocked
    duration_ms: float
    message: str = ""
    exit_code: int | None = None
    tool: str | None = None
    outcome: str | None = None  # blocked, rewrote, skipped, asked, deferred, context, stopped
    system_message: str = ""  # for the person, never the model
    code: str | None = None  # a coded refusal of what the hook answered (HOOK001)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "hook": self.hook, "eventName": self.event,
                               "status": self.status, "durationMs": round(self.duration_ms, 3)}
        for key, value in (("message", self.message), ("exitCode", self.exit_code),
                           ("tool", self.tool), ("outcome", self.outcome),
                           ("systemMessage", self.system_message), ("code", self.code)):
            if value not in (None, ""):
                out[key] = value
        return out


class ChainOutcome(Frozen):
    """What the chain of one event decided, for the caller to apply."""

    blocked: str | None = None  # the reason the model reads; None: not blocked
    blocked_by: str | None = None
    stop: str | None = None  # continue: false; why the session must end
    ask: bool = False  # a hook asked for a person's approval
    tool_input: Mapping[str, Any] | None = None  # the rewritten arguments, when rewritten
    tool_output: str | None = None  # the replaced result, when replaced
    skip: str | None = None  # do not run the tool; the model reads this instead
    skipped_by: str | None = None
    context: tuple[str, ...] = ()  # additionalContext, in order
    runs: tuple[HookRun, ...] = ()

    @property
    def context_text(self) -> str:
        return "\n".join(c for c in self.context if c)


NOTHING = ChainOutcome()


def spellings(tool: str) -> tuple[str, ...]:
    """``tool`` and the other names of the same built-in tool, if it is one: rein's two
    spellings, and Claude Code's name."""
    kind = kind_of(tool)
    if kind is None:
        return (tool,)
    return (tool, *(name for name, k in ALIASES.items() if k is kind and name != tool),
            claude_name(tool))


def from_spec(spec: HookSpec, events: Sequence[str] | None = None, *,
              params: Mapping[str, str] | None = None, source: str | None = None) -> Hook:
    """A ``[hooks.NAME]`` table as a hook (for ``events``, else the table's own)."""
    command = spec.command[0] if spec.shell else tuple(spec.command)
    return Hook(name=spec.name, command=command,
                events=tuple(spec.events if events is None else events), matcher=spec.matcher,
                timeout_seconds=spec.timeout_seconds, source=source or spec.source,
                params=params or {}, fail_closed=spec.fail_closed, files=spec.files,
                format=spec.format)


def configured_hooks(config: Config) -> tuple[Hook, ...]:
    """The hooks of a merged ``rein.toml`` that fire in every session: those that name
    events (the others run only where an OAP profile binds them)."""
    return tuple(from_spec(spec) for spec in config.hooks.values() if spec.events)


def hook_env(environ: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """A hook's environment: rein's own, less every secret and the built-in providers' API
    keys, plus the project directory under the name rein and Claude Code scripts read."""
    env = {k: v for k, v in environ.items()
           if not k.startswith(SECRET_PREFIX) and k not in _KEY_VARIABLES}
    env["REIN_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = str(workspace)
    return env


class HookRunner:
    """Runs the hook chain of each event of one session (a model attempt, a conversation)."""

    @classmethod
    def for_config(cls, config: Config, *, cwd: Path, session_id: str,
                   sink: HookSink | None = None, redact: Redact | None = None) -> HookRunner:
        """The runner of a session under a merged ``rein.toml`` (what a surface such as a
        conversation runtime calls); a project file's hooks are in it only once trusted."""
        return cls(configured_hooks(config), cwd=cwd, session_id=session_id, sink=sink,
                   redact=redact)

    def __init__(self, hooks: Sequence[Hook], *, cwd: Path, session_id: str,
                 sink: HookSink | None = None, redact: Redact | None = None,
                 env: Mapping[str, str] | None = None,
                 extra_input: Mapping[str, Any] | None = None,
                 transcript: Transcript | None = None) -> None:
        self.hooks = tuple(hooks)
        self.cwd = cwd
        self.session_id = session_id
        self.sink = sink
        self.redact: Redact = redact or (lambda value: value)
        self._env = env
        self.extra_input = dict(extra_input or {})  # fields every input carries (rein's ids)
        self.transcript = transcript  # writes the transcript a hook may read
        self._count = 0

    def active(self, event: str, tool: str | None = None) -> tuple[Hook, ...]:
        """The hooks the chain of ``event`` (for ``tool``) runs, in order."""
        return tuple(h for h in self.hooks if h.selects(event, tool))

    async def run(self, event: str, payload: Mapping[str, Any] | None = None, *,
                  tool: str | None = None) -> ChainOutcome:
        """Run the chain of ``event``. ``payload`` holds the event's own fields
        (``tool_input``, ``tool_response``, ``source``...); ``tool`` names the tool a tool
        event is about (its matcher is checked against it)."""
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; known: {', '.join(HOOK_EVENTS)}")
        chain = self.active(event, tool)
        if not chain:
            return NOTHING
        fields = dict(payload or {})
        if self.transcript is not None:
            path = self.transcript()
            if path is not None:
                fields["transcript_path"] = path
        state = _Chain()
        rewritten: Mapping[str, Any] | None = None
        for hook in chain:
            if rewritten is not None:
                fields["tool_input"] = rewritten  # rewrites apply in order
            claude = tool is not None and hook.speaks_claude(tool)
            shown = self._as_claude(fields, tool) if claude and tool is not None else fields
            answer, run = await self._one(hook, event, shown, tool)
            if claude and tool is not None and answer.updated_input is not None:
                answer = answer.replace(updated_input=from_claude(
                    tool, answer.updated_input, self._root()))
            state.add(hook, answer)
            if answer.updated_input is not None:
                rewritten = answer.updated_input
            state.runs.append(run)
        return state.outcome(rewritten=rewritten)

    def _root(self) -> Path:
        return Path(os.path.abspath(self.cwd))

    def _as_claude(self, fields: Mapping[str, Any], tool: str) -> dict[str, Any]:
        """A tool event's fields as Claude Code sends them: its tool name and input shape."""
        shown = dict(fields)
        shown["tool_name"] = claude_name(tool)
        if isinstance(fields.get("tool_input"), Mapping):
            shown["tool_input"] = to_claude(tool, fields["tool_input"], self._root())
        return shown

    async def _one(self, hook: Hook, event: str, fields: Mapping[str, Any],
                   tool: str | None) -> tuple[HookAnswer, HookRun]:
        self._count += 1
        run_id = f"{self.session_id}/hook-{self._count}"
        wire = {"session_id": self.session_id, "cwd": str(self.cwd), "hook_event_name": event,
                "permission_mode": "default", **fields, **self.extra_input}
        if hook.params:
            wire["params"] = dict(hook.params)
        base = {"id": run_id, "hook": hook.name, "eventName": event, "source": hook.source}
        if tool is not None:
            base["tool"] = tool
        if self.sink is not None:
            self.sink("started", {**base, "status": "running", "input": self.redact(wire)})
        env = hook_env(os.environ if self._env is None else self._env, self.cwd)
        try:
            # The hook runs from copies of the bytes just compared with the trusted digests:
            # a script rewritten after the check is not what runs (rein.config.command_seal).
            with sealed_command(hook.command, self.cwd, hook.files,
                                search_path=env.get("PATH", os.defpath)) as sealed:
                if sealed.changed:
                    answer = _changed(hook, sealed.changed)
                    run = HookRun(id=run_id, hook=hook.name, event=event,
                                  status=answer.status, duration_ms=0.0,
                                  message=answer.message, tool=tool, outcome=_outcome(answer))
                    self._completed(base, run, "")
                    return answer, run
                command = sealed.command
                result = await run_process(
                    command if isinstance(command, str) else list(command), cwd=self.cwd,
                    env=env, timeout=hook.timeout_seconds,
                    stdin_data=json.dumps(wire).encode(), grace_seconds=0.5)
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            answer = HookAnswer(status="failed", message=f"cannot start: {why}")
            if hook.fail_closed:
                answer = HookAnswer(status="blocked", message=f"hook {hook.name} failed "
                                    f"({answer.message}) and is fail_closed")
            run = HookRun(id=run_id, hook=hook.name, event=event, status=answer.status,
                          duration_ms=0.0, message=answer.message, tool=tool,
                          outcome=_outcome(answer))
            self._completed(base, run, "")
            return answer, run
        answer = interpret(event, result.exit_code, result.stdout, result.stderr,
                           timed_out=result.timed_out)
        if answer.status == "failed" and hook.fail_closed:
            answer = HookAnswer(status="blocked", message=f"hook {hook.name} failed "
                                f"({answer.message}) and is fail_closed", code=answer.code)
        run = HookRun(id=run_id, hook=hook.name, event=event, status=answer.status,
                      duration_ms=result.duration_seconds * 1000,
                      message=str(self.redact(answer.message)), exit_code=result.exit_code,
                      tool=tool, outcome=_outcome(answer),
                      system_message=str(self.redact(answer.system_message)), code=answer.code)
        self._completed(base, run, result.stdout)
        return answer, run

    def _completed(self, base: Mapping[str, Any], run: HookRun, stdout: str) -> None:
        if self.sink is None:
            return
        data = {**base, **run.to_json()}
        if stdout.strip():
            data["output"] = self.redact(stdout[:_RECORDED_OUTPUT])
        self.sink("completed", data)


class _Chain(Record):
    """The chain's answer so far."""

    blocked: str | None = None
    blocked_by: str | None = None
    stop: str | None = None
    ask: bool = False
    output: str | None = None
    skip: str | None = None
    skipped_by: str | None = None
    context: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)

    def add(self, hook: Hook, answer: HookAnswer) -> None:
        if answer.context:
            self.context.append(answer.context)
        if answer.status == "blocked" and self.blocked is None:
            self.blocked, self.blocked_by = answer.message, hook.name
        if answer.stop_reason is not None and self.stop is None:
            self.stop = answer.stop_reason
        if answer.permission in ("ask", "defer"):
            self.ask = True
        if answer.updated_output is not None:
            self.output = answer.updated_output
        if answer.skip_result is not None:
            self.skip, self.skipped_by = answer.skip_result, hook.name

    def outcome(self, *, rewritten: Mapping[str, Any] | None) -> ChainOutcome:
        runs = tuple(self.runs)
        if self.blocked is not None:  # a block discards every rewrite and skip
            return ChainOutcome(blocked=self.blocked, blocked_by=self.blocked_by,
                                stop=self.stop, context=tuple(self.context), runs=runs)
        return ChainOutcome(ask=self.ask, tool_input=rewritten, tool_output=self.output,
                            skip=self.skip, skipped_by=self.skipped_by,
                            context=tuple(self.context), runs=runs)


def _changed(hook: Hook, paths: Sequence[str]) -> HookAnswer:
    """A hook whose files changed since they were trusted is not run, and the session stops:
    running it would run code nobody approved, and skipping it would drop a guard."""
    why = (f"hook {hook.name} was not run: {', '.join(paths)} changed since rein read and "
           "trusted its configuration; review the change, then run `rein config trust` "
           "again (for a project rein.toml) and start the run again")
    return HookAnswer(status="blocked", message=why, stop_reason=why)


def _outcome(answer: HookAnswer) -> str | None:
    """One word for what a run did, for the reader of the trace."""
    if answer.stop_reason is not None:
        return "stopped"
    if answer.status == "blocked":
        return "blocked"
    if answer.skip_result is not None:
        return "skipped"
    if answer.updated_input is not None or answer.updated_output is not None:
        return "rewrote"
    if answer.permission == "ask":
        return "asked"
    if answer.permission == "defer":
        return "deferred"
    if answer.context:
        return "context"
    return None
