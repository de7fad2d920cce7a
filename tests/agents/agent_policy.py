"""What the scripted model answers: an agent that follows the instruction file rein wrote.

The policy reads the tool outputs so far (what the commands printed) and returns the next
tool call, exactly as the instruction file teaches: ``.rein/bin/rein next --json`` (or
``.rein/bin/rein dev --json`` for the development flow), the work, then the envelope:

- with a file tool (Claude Code's ``Write``), the files and ``.rein/inbox.json`` are
  written with it, then ``.rein/bin/rein submit``;
- with a shell alone (the Codex CLI), the files go through here-documents and the envelope
  through ``.rein/bin/rein submit -`` in a here-document whose delimiter is quoted.

It stops (``None``: the model's final text) when rein says DONE, STOPPED or WAITING for a
person. It never answers an approval.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_clis import tool_output
from scripted_model import Answer, ToolCall

REIN = ".rein/bin/rein"
PROBE = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"
MAX_CALLS = 40  # a session that has not stopped by then loops

# What the agent writes for an instruction: {path relative to the workspace: text}.
Work = Callable[[Mapping[str, Any]], Mapping[str, str]]


def heredoc(path: str, text: str, tag: str = "REIN_FILE") -> str:
    """Write ``text`` to ``path`` (it must end with a newline: the delimiter is a line)."""
    assert text.endswith("\n") and f"\n{tag}\n" not in f"\n{text}", text
    return f"mkdir -p \"$(dirname '{path}')\" && cat > '{path}' <<'{tag}'\n{text}{tag}\n"


def submit_command(envelope: Mapping[str, Any]) -> str:
    """``rein submit -`` with the envelope in a quoted here-document, as the file teaches."""
    return f"{REIN} submit - <<'REIN_ENVELOPE'\n{json.dumps(envelope)}\nREIN_ENVELOPE"


def first_json(text: str) -> dict[str, Any] | None:
    """The first JSON object a command printed (rein's ``--json`` output)."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return value if isinstance(value, dict) else None
    return None


class Driver:
    """One agent session's policy. ``work`` says what to write for an instruction,
    ``outputs_of`` what the envelope's outputs are; ``entry`` is the rein command that
    asks for the next step. ``file_tool`` is the workspace when the agent writes files with
    its file tool (an absolute path, as Claude Code's ``Write`` takes), ``None`` when it has
    only a shell."""

    def __init__(self, work: Work, outputs_of: Callable[[Mapping[str, Any]], dict[str, Any]],
                 *, entry: str = "next --json", file_tool: Path | None = None) -> None:
        self.work, self.outputs_of, self.entry = work, outputs_of, entry
        self.file_tool = file_tool
        self.instructions: list[dict[str, Any]] = []  # every instruction it answered
        self.stopped_on: dict[str, Any] | None = None  # what rein said when it stopped
        self.kinds: list[str] = []  # what each call was: probe, ask, write, submit
        self.queue: list[tuple[str, Answer]] = [("probe", PROBE), ("ask", f"{REIN} {entry}")]

    def __call__(self, outputs: list[str]) -> Answer | None:
        assert len(outputs) < MAX_CALLS, f"the session went on for {MAX_CALLS} calls"
        if not self.queue and self.kinds:
            self._decide(self.kinds[len(outputs) - 1], tool_output(outputs[-1]))
        if not self.queue:
            return None
        kind, call = self.queue.pop(0)
        self.kinds.append(kind)
        return call

    def _decide(self, kind: str, said: str) -> None:
        if kind == "submit":  # what it printed is for a person: ask rein where things stand
            self.queue.append(("ask", f"{REIN} {self.entry}"))
            return
        status = first_json(said) if kind == "ask" else None
        instruction = None if status is None else self._instruction(status)
        if instruction is None:
            self.stopped_on = status
            return
        self.instructions.append(instruction)
        files = dict(self.work(instruction))
        envelope = {"protocol": "rein.driver/1", "token": instruction["token"],
                    "node": instruction["node"], "attempt": instruction["attempt"],
                    "status": "done", "outputs": self.outputs_of(instruction)}
        if self.file_tool is None:
            self.queue.append(("submit", "".join(heredoc(p, t) for p, t in files.items())
                               + submit_command(envelope)))
            return
        files[".rein/inbox.json"] = json.dumps(envelope)
        for path, text in files.items():
            target = self.file_tool / path
            if target.exists():  # Claude Code writes over a file only once it has read it
                self.queue.append(("write", ToolCall("Read", {"file_path": str(target)})))
            self.queue.append(("write", ToolCall("Write", {"file_path": str(target),
                                                           "content": text})))
        self.queue.append(("submit", f"{REIN} submit"))

    @staticmethod
    def _instruction(status: Mapping[str, Any]) -> dict[str, Any] | None:
        nested = status.get("instruction")
        if isinstance(nested, dict):  # rein dev --json: an instruction, or an approval
            return dict(nested) if nested.get("status") == "instruction" else None
        if status.get("status") == "instruction" and "token" in status:  # rein next --json
            return dict(status)
        return None


__all__ = ["PROBE", "REIN", "Driver", "first_json", "heredoc", "submit_command"]
