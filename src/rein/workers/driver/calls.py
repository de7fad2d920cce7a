"""The record of calls: every invocation of a driver-facing command, as rein saw it.

``rein next``, ``rein submit``, ``rein dev`` and ``rein spec`` (``status`` and ``start``
too; not their ``report``) each append one JSON line to ``.rein/calls.jsonl`` of their workspace when they
have run (``rein.cli.main`` writes it, importing nothing a turn does not import already):

===========  ================================================================================
``at``       when the command started (UTC, ISO 8601)
``seconds``  how long it took, start to exit
``command``  ``next``, ``submit``, ``dev``, ``dev status``, ``dev start``, ``spec``,
             ``spec status`` or ``spec start``
``args``     its arguments (an envelope on stdin is not one)
``exit``     its exit code
``token``    the instruction it printed (a refused submit prints the pending one again)
``answered`` for ``submit``: the token of the envelope it was given
``status``   what it printed: ``instruction``, ``waiting``, ``done``, ``stopped``,
             ``refused`` (``rein dev``: its reason)
``for``      with ``waiting``: who acts next (``approval``, ``driver``, ...)
``run``      the run it printed
``code``     a refusal's or error's code (``DRIVER_ENVELOPE``, ``USAGE``, ``DEV009``...)
``agent``    the agent session that ran it, where the agent's environment says so:
             ``{"name": "codex", "session", "call", "logs"}`` (``CODEX_THREAD_ID``,
             ``CODEX_TOOL_CALL_ID``, ``CODEX_HOME``) or ``{"name": "claude-code", "session",
             "logs"}`` (``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_CONFIG_DIR`` or ``~/.claude``)
===========  ================================================================================

Every invocation is on it, a person's too (they have no ``agent``), so a report counts
*steps* as the commands were run, and *protocol errors* as every call that was refused,
split into the agent's (:data:`AGENT_CODES`: what it sent or asked was wrong) and rein's
own (anything else: its git work failing, a store it could not open, another process
holding the run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

CALLS = ".rein/calls.jsonl"

# Refusals caused by what the agent sent or asked: its protocol errors. Every other code
# on a call is rein's own failure (its git work, its store, a lock another process held).
AGENT_CODES = frozenset({
    "DRIVER001", "DRIVER_ANSWERED", "DRIVER_ENVELOPE", "DRIVER_ENVELOPE_LIMIT",
    "DRIVER_NOT_CURRENT", "DRIVER_NO_ENVELOPE", "DRIVER_STALE", "DRIVER_WRITES_OUTSIDE",
    "DRIVER_WRONG_RUN", "DRIVER404", "RT031", "RT032", "RT033", "RUN010", "RUN404", "USAGE",
    "APPROVAL003", "APPROVAL004",
})


def read_calls(workspace: Path) -> list[dict[str, Any]]:
    """The calls recorded in ``workspace``, oldest first; a line that is not one is
    skipped (a write cut short by a full disk)."""
    path = Path(workspace) / CALLS
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return list(_parse(text))


def _parse(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("command"), str):
            yield value


def whose(code: str) -> str:
    """``agent`` for a refusal the agent caused, ``rein`` for rein's own failure."""
    return "agent" if code in AGENT_CODES else "rein"


def concerns(call: Mapping[str, Any], tokens: set[str], runs: set[str]) -> bool:
    """Whether ``call`` was about one of ``tokens`` or ``runs``."""
    return bool({call.get("token"), call.get("answered")} & tokens) or call.get("run") in runs


__all__ = ["AGENT_CODES", "CALLS", "concerns", "read_calls", "whose"]
