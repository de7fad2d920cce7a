"""What a driving agent spent, read from the agent's own records, each model call attributed
to the rein turn that caused it.

Two formats are read (``tests/agents`` runs the real CLIs that write them):

- **Codex CLI rollouts**, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl``
  (``$CODEX_HOME`` is ``~/.codex`` by default): one ``token_usage_record`` per model
  response (``payload.usage``: ``input_tokens`` with ``cached_input_tokens`` among them,
  ``cache_write_input_tokens``, ``output_tokens`` with ``reasoning_output_tokens`` among
  them); a rollout written before that record existed is read from its cumulative
  ``event_msg``/``token_count`` totals instead. The model is the latest ``turn_context``'s.
  Shell commands are ``function_call`` items (``arguments.cmd``) and what they printed the
  ``function_call_output`` of the same ``call_id``.
- **Claude Code transcripts**, ``<config>/projects/<cwd, each character not a letter or a
  digit made '-'>/<session>.jsonl`` (``<config>`` is ``$CLAUDE_CONFIG_DIR``, else
  ``~/.claude``): each ``assistant`` record carries its API message, with ``model`` and
  ``usage`` (``input_tokens`` without the cache, ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``, ``output_tokens``). A message written as several
  records (one per content block) is one call, counted once, with the usage of its last
  record. Commands are ``Bash`` ``tool_use`` blocks and what they printed the ``tool_result``
  of the same id. (Sub-agents' own files, beside the transcript, are not read.) A
  transcript can lack its last message: Claude Code records each answer in the background,
  and the flush it runs at exit can miss one still on its way (seen on a loaded machine),
  while the ``last-prompt`` record it writes after that flush names it (``leafUuid``). Such
  a message is *unwritten*: its model call is in no record, so it is counted nowhere, and
  the session says so (:attr:`Session.unwritten`, with the turn and command it would
  belong to).

Usage is normalised to: ``input_tokens`` (every input token: read from a cache, written
to one, or neither), ``cached_input_tokens`` (read from a cache), ``cache_write_tokens``,
``output_tokens`` (reasoning included) and ``reasoning_tokens``.

**Attribution, exactly, by turn token.** rein prints each instruction's token (``drv-``
and 20 hex digits) and the agent's record holds what its commands printed. Walking the
record in order, the output of a tool call that ran a rein command (``rein next``, ``rein
submit``, ``rein dev``; what any other tool shows, a file holding an old envelope say,
gives nothing) *gives* a turn when it shows an instruction: the token after
``INSTRUCTION `` (the text form), or the ``token`` after ``"status": "instruction"`` (the
JSON forms, ``rein dev --json`` included, whose instruction is nested); a result that shows
neither but holds exactly one token of the runs in question gives that one (``rein next
--json | jq -r .token``). **A model call belongs to the turn whose token the conversation
most recently received before the call was made**: the work an instruction set off, its
envelope and the agent's wrap-up after it. Calls before the conversation received any
token of those runs are *unattributed*. In the same way a call belongs to the **command**
whose output the conversation most recently received: the last ``rein next``, ``rein
submit`` or ``rein dev`` in the latest tool call that ran one (before any: none).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, Record, field

TOKEN = re.compile(r"drv-[0-9a-f]{20}")
_TEXT_INSTRUCTION = re.compile(r"INSTRUCTION (drv-[0-9a-f]{20})")
_JSON_INSTRUCTION = re.compile(r'"status"\s*:\s*"instruction"')
_JSON_TOKEN = re.compile(r'"token"\s*:\s*"(drv-[0-9a-f]{20})"')
# A rein command in a shell line: `rein next`, `.rein/bin/rein submit -`, `python -m rein dev`.
_COMMAND = re.compile(r"(?:^|[\s;&|(`])(?:\S*/)?rein(?:\.exe)?\s+(next|submit|dev)"
                      r"(?:\s+(status|start|report))?(?=$|[\s;&|)`])", re.MULTILINE)
MAX_LOG_BYTES = 512 * 1024 * 1024  # a record larger than this is not read


class ModelCall(Frozen):
    """One model call of an agent session, attributed."""

    agent: str  # codex, claude-code
    session: str
    file: str
    index: int  # its line in the file: the record's own order
    at: str | None
    model: str | None
    input_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    turn: str | None  # the turn token the conversation most recently received; None before
    command: str | None  # the rein command whose output it most recently received

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Unwritten(Frozen):
    """A message an agent's record names but does not hold (the agent exited before writing
    it), and where it would belong: its tokens are counted nowhere."""

    message: str  # its id in the record (Claude Code's uuid)
    turn: str | None  # the turn the conversation had last received before it
    command: str | None  # the rein command whose output it had last received


class Session(Record):
    """One agent record read, and the calls found in it."""

    agent: str
    session: str
    file: str
    cwd: str | None = None
    calls: list[ModelCall] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set)  # every turn token it received
    unwritten: list[Unwritten] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "session": self.session, "file": self.file,
                "model_calls": len(self.calls), "turns_seen": len(self.tokens),
                "unwritten_messages": len(self.unwritten)}


def printed_turn(text: str, known: set[str] | None = None) -> str | None:
    """The turn a command's output gives the conversation (see the module's rule)."""
    found = _TEXT_INSTRUCTION.search(text)
    if found:
        return found.group(1)
    marker = _JSON_INSTRUCTION.search(text)
    if marker:
        after = _JSON_TOKEN.search(text, marker.end())
        if after:
            return after.group(1)
    tokens = set(TOKEN.findall(text))
    if known is not None:
        tokens &= known
    return tokens.pop() if len(tokens) == 1 else None


def rein_command(line: str) -> str | None:
    """The last rein driver command a shell line runs (``next``, ``submit``, ``dev``,
    ``dev status``, ``dev start``), or ``None``."""
    found = list(_COMMAND.finditer(line or ""))
    if not found:
        return None
    verb, sub = found[-1].group(1), found[-1].group(2)
    if verb == "dev" and sub in ("status", "start"):
        return f"dev {sub}"
    return None if sub == "report" else verb


class _Walk:
    """The conversation's state while a record is read in order."""

    def __init__(self, agent: str, session: str, file: str, known: set[str] | None) -> None:
        self.agent, self.session, self.file, self.known = agent, session, file, known
        self.turn: str | None = None
        self.command: str | None = None
        self.commands: dict[str, str] = {}  # tool call id -> the shell line it ran
        self.tokens: set[str] = set()
        self.model: str | None = None

    def ran(self, call_id: str, line: str) -> None:
        self.commands[call_id] = line

    def received(self, call_id: str, output: str) -> None:
        """A tool result enters the conversation: only what a rein command printed gives
        a turn (a file the agent reads that holds an old envelope gives none)."""
        kind = rein_command(self.commands.get(call_id, ""))
        if kind is None:
            return
        self.command = kind
        token = printed_turn(output, self.known)
        if token is not None and (self.known is None or token in self.known):
            self.turn = token
            self.tokens.add(token)

    def state(self) -> tuple[str | None, str | None]:
        return self.turn, self.command

    def call(self, index: int, at: Any, usage: Mapping[str, int], model: str | None,
             state: tuple[str | None, str | None]) -> ModelCall:
        return ModelCall(agent=self.agent, session=self.session, file=self.file, index=index,
                         at=at if isinstance(at, str) else None, model=model or self.model,
                         turn=state[0], command=state[1], **usage)


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        if path.stat().st_size > MAX_LOG_BYTES:
            return
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return
    with handle:
        for index, line in enumerate(handle):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield index, value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# -- Codex CLI ----------------------------------------------------------------------------


def _codex_usage(u: Mapping[str, Any]) -> dict[str, int]:
    return {"input_tokens": _int(u.get("input_tokens")),
            "cached_input_tokens": _int(u.get("cached_input_tokens")),
            "cache_write_tokens": _int(u.get("cache_write_input_tokens")),
            "output_tokens": _int(u.get("output_tokens")),
            "reasoning_tokens": _int(u.get("reasoning_output_tokens"))}


def read_codex(path: Path, known: set[str] | None = None) -> Session:
    """A Codex CLI rollout's model calls, attributed (``known``: the turn tokens of the
    runs in question; ``None`` takes any)."""
    records = list(_lines(path))
    session_id, cwd = "", None
    for _, r in records[:1]:
        if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict):
            session_id = str(r["payload"].get("id") or r["payload"].get("session_id") or "")
            cwd = r["payload"].get("cwd")
    walk = _Walk("codex", session_id or path.stem, str(path), known)
    per_response = any(r.get("type") == "token_usage_record" for _, r in records)
    out = Session(agent="codex", session=walk.session, file=str(path), cwd=cwd)
    snapshot = walk.state()
    total: dict[str, int] | None = None
    for index, r in records:
        kind, p = r.get("type"), r.get("payload")
        if not isinstance(p, dict):
            continue
        if kind == "turn_context" and p.get("model"):
            walk.model = str(p["model"])
        elif kind == "response_item":
            item = p.get("type")
            if item in ("function_call", "custom_tool_call", "local_shell_call") or \
                    (item == "message" and p.get("role") == "assistant") or item == "reasoning":
                snapshot = walk.state()  # a model's output: the state its request was made in
            if item == "function_call":
                walk.ran(str(p.get("call_id")), _codex_line(p.get("arguments")))
            elif item in ("function_call_output", "custom_tool_call_output"):
                walk.received(str(p.get("call_id")), _text(p.get("output")))
        elif kind == "token_usage_record" and isinstance(p.get("usage"), dict):
            out.calls.append(walk.call(index, r.get("timestamp"), _codex_usage(p["usage"]),
                                       None, snapshot))
        elif kind == "event_msg" and p.get("type") == "token_count" and not per_response:
            info = p.get("info")
            now = info.get("total_token_usage") if isinstance(info, dict) else None
            if isinstance(now, dict):
                now_usage = _codex_usage(now)
                if total is None or now_usage != total:
                    delta = {k: v - (total or {}).get(k, 0) for k, v in now_usage.items()}
                    out.calls.append(walk.call(index, r.get("timestamp"), delta, None,
                                               snapshot))
                    total = now_usage
    out.tokens = walk.tokens
    return out


def _codex_line(arguments: Any) -> str:
    """The shell line of an ``exec_command`` (``cmd``) or ``shell`` (``command``) call."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return str(arguments)
    if not isinstance(args, dict):
        return ""
    line = args.get("cmd", args.get("command"))
    return " ".join(map(str, line)) if isinstance(line, list) else str(line or "")


# -- Claude Code --------------------------------------------------------------------------


def _claude_usage(u: Mapping[str, Any]) -> dict[str, int]:
    read, wrote = _int(u.get("cache_read_input_tokens")), _int(u.get("cache_creation_input_tokens"))
    return {"input_tokens": _int(u.get("input_tokens")) + read + wrote,
            "cached_input_tokens": read, "cache_write_tokens": wrote,
            "output_tokens": _int(u.get("output_tokens")), "reasoning_tokens": 0}


def read_claude(path: Path, known: set[str] | None = None) -> Session:
    """A Claude Code transcript's model calls, attributed (see :func:`read_codex`)."""
    walk = _Walk("claude-code", path.stem, str(path), known)
    out = Session(agent="claude-code", session=path.stem, file=str(path))
    messages: dict[str, int] = {}  # message id -> its call's place in out.calls
    held: set[str] = set()  # every record's uuid
    leaf: str | None = None  # the conversation's last message, as the latest last-prompt says
    for index, r in _lines(path):
        if isinstance(r.get("uuid"), str):
            held.add(r["uuid"])
        if r.get("type") == "last-prompt":
            leaf = r["leafUuid"] if isinstance(r.get("leafUuid"), str) else None
        message = r.get("message")
        if out.cwd is None and isinstance(r.get("cwd"), str):
            out.cwd = r["cwd"]
        if isinstance(r.get("sessionId"), str):
            walk.session = out.session = r["sessionId"]
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if r.get("type") == "assistant":
            for b in blocks:
                if b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                    walk.ran(str(b.get("id")), str(b["input"].get("command") or ""))
            usage = message.get("usage")
            if not isinstance(usage, dict):
                continue
            counted = _claude_usage(usage)
            if not any(counted.values()):
                continue  # a message written by the client itself (no model call)
            mid = str(message.get("id") or f"line-{index}")
            model = message.get("model") if isinstance(message.get("model"), str) else None
            if mid in messages:  # the same message's next block: the fuller usage
                place = messages[mid]
                first = out.calls[place]
                out.calls[place] = walk.call(first.index, first.at, counted, first.model,
                                             (first.turn, first.command))
                continue
            messages[mid] = len(out.calls)
            out.calls.append(walk.call(index, r.get("timestamp"), counted, model, walk.state()))
        elif r.get("type") == "user":
            for b in blocks:
                if b.get("type") == "tool_result":
                    walk.received(str(b.get("tool_use_id")), _text(b.get("content")))
    if leaf is not None and leaf not in held:  # named at exit, never written: the last one
        turn, command = walk.state()
        out.unwritten.append(Unwritten(message=leaf, turn=turn, command=command))
    out.tokens = walk.tokens
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(p.get("text") if isinstance(p, dict) else p) for p in content)
    return "" if content is None else str(content)


# -- finding the records ------------------------------------------------------------------


def mangled(path: Path) -> str:
    """Claude Code's folder name for a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def default_places(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where the agents keep their records for this account: ``$CODEX_HOME`` (or
    ``~/.codex``) and ``$CLAUDE_CONFIG_DIR`` (or ``~/.claude``)."""
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    return [Path(env.get("CODEX_HOME") or home / ".codex"),
            Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")]


def candidates(places: Iterable[Path], workspace: Path,
               sessions: Mapping[str, set[str]] | None = None) -> list[tuple[str, Path]]:
    """``(agent, file)`` of each record that may hold this workspace's turns: in a Codex
    home, the rollouts of the sessions named (``sessions["codex"]``) and those whose
    ``cwd`` is the workspace; in a Claude Code folder, the transcripts of the workspace's
    project folder and of the sessions named; a file given itself, by its content."""
    found: dict[Path, str] = {}
    named = sessions or {}
    for place in places:
        place = Path(place)
        if place.is_file():
            agent = _kind_of(place)
            if agent:
                found[place] = agent
            continue
        rollouts = place / "sessions"
        if rollouts.is_dir():
            for f in sorted(rollouts.rglob("rollout-*.jsonl")):
                if any(f.stem.endswith(s) for s in named.get("codex", ())) or \
                        _codex_cwd(f) == str(workspace):
                    found[f] = "codex"
        projects = place / "projects"
        if projects.is_dir():
            for f in sorted((projects / mangled(workspace)).glob("*.jsonl")):
                found[f] = "claude-code"
            for s in named.get("claude-code", ()):
                for f in projects.glob(f"*/{s}.jsonl"):
                    found[f] = "claude-code"
        if not rollouts.is_dir() and not projects.is_dir() and place.is_dir():
            for f in sorted(place.rglob("*.jsonl")):  # a folder of records, given as it is
                agent = _kind_of(f)
                if agent:
                    found[f] = agent
    return sorted(((a, f) for f, a in found.items()), key=lambda x: str(x[1]))


def _codex_cwd(path: Path) -> str | None:
    for _, r in _lines_head(path):
        if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict):
            cwd = r["payload"].get("cwd")
            return str(Path(cwd).resolve()) if isinstance(cwd, str) else None
    return None


def _lines_head(path: Path, count: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for index in range(count):
                line = handle.readline()
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    yield index, value
    except OSError:
        return


def _kind_of(path: Path) -> str | None:
    """Which agent wrote ``path``, from its first records."""
    for _, r in _lines_head(path, 8):
        if r.get("type") in ("session_meta", "turn_context", "response_item"):
            return "codex"
        if r.get("type") in ("user", "assistant", "queue-operation", "summary") or \
                "sessionId" in r:
            return "claude-code"
    return None


def read(agent: str, path: Path, known: set[str] | None = None) -> Session:
    """One record of ``agent`` (``codex`` or ``claude-code``), attributed."""
    return read_codex(path, known) if agent == "codex" else read_claude(path, known)


__all__ = ["MAX_LOG_BYTES", "TOKEN", "ModelCall", "Session", "Unwritten", "candidates",
           "default_places", "mangled", "printed_turn", "read", "read_claude", "read_codex",
           "rein_command"]
