"""The transcript a hook reads: ``transcript_path``, the session's conversation so far.

Claude Code hands every hook the path of the session's transcript, one JSON object a line,
and hooks read it (the last assistant message, the tool calls so far). rein writes the same
record shapes for a model-worker session before each hook chain runs, redacted as the trace
is, to ``.rein/transcripts/<run>/<node>#<attempt>-<digest>.jsonl`` in the workspace (the
digest keeps two node keys that differ only in punctuation apart)::

    {"type": "user", "message": {"role": "user", "content": "<the brief>"}, ...}
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "..."},
        {"type": "tool_use", "id": "call-1", "name": "shell", "input": {"command": "ls"}}]}}
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call-1", "content": "...", "is_error": false}]}}

Each record also carries ``sessionId``, ``uuid`` and ``parentUuid`` (derived from the
session and the position, so a rewrite gives the same ids) and ``cwd``. The file is
replaced whole (written aside, then renamed), so a hook never reads half of it. Tools keep
the names the model called them by.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rein.providers.types import Message

_UNSAFE = re.compile(r"[^A-Za-z0-9._#-]+")
_NAMESPACE = uuid.UUID("8d0f2a54-6f0e-4d3b-9c57-5d0b8e5c2a11")


def transcript_folder(workspace: Path, run_id: str) -> Path:
    """The folder of one run's transcripts (removed with the run: ``rein runs prune``)."""
    return Path(workspace) / ".rein" / "transcripts" / _UNSAFE.sub("-", run_id)


def transcript_file(workspace: Path, run_id: str, node: str, attempt: int) -> Path:
    """Where the transcript of one node attempt's session is written."""
    name = f"{node}#{attempt}"
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return transcript_folder(workspace, run_id) / f"{_UNSAFE.sub('-', name)}-{digest}.jsonl"


def records(messages: Sequence[Message], *, session_id: str, cwd: str) -> list[dict[str, Any]]:
    """The conversation as Claude Code's transcript records, in order."""
    out: list[dict[str, Any]] = []
    parent: str | None = None
    for index, message in enumerate(messages):
        uid = str(uuid.uuid5(_NAMESPACE, f"{session_id}\x1f{index}"))
        out.append({"type": "assistant" if message.role == "assistant" else "user",
                    "sessionId": session_id, "uuid": uid, "parentUuid": parent, "cwd": cwd,
                    "message": _message(message)})
        parent = uid
    return out


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": message.tool_call_id,
            "content": message.content, "is_error": message.is_error}]}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    content: list[dict[str, Any]] = []
    if message.content:
        content.append({"type": "text", "text": message.content})
    content += [{"type": "tool_use", "id": call.id, "name": call.name,
                 "input": dict(call.arguments)} for call in message.tool_calls]
    return {"role": "assistant", "content": content}


def writer(path: Path, messages: Callable[[], Sequence[Message]], *, session_id: str,
           cwd: str, redact: Callable[[str], str]) -> Callable[[], str | None]:
    """What a hook runner calls before a chain: write the transcript, return its path
    (None when it cannot be written: the hooks still run, without one)."""

    def write() -> str | None:
        lines = [redact(json.dumps(record, ensure_ascii=False))
                 for record in records(messages(), session_id=session_id, cwd=cwd)]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".transcript.", suffix=".tmp")
        except OSError:
            return None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write("".join(line + "\n" for line in lines))
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return None
        return str(path)

    return write
