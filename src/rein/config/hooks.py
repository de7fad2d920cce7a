"""The ``[hooks]`` table of ``rein.toml``: named lifecycle hooks, checked where they are read.

::

    [hooks.guard-env]
    command = "hooks/guard-env.sh"       # a string runs through /bin/sh -c; a list is an argv
    events = ["PreToolUse"]              # SessionStart PreToolUse PostToolUse PreCompact SessionEnd
    matcher = "file_write|edit"          # tool events: "*" (every tool), names with |, a regex
    timeout_seconds = 10                 # then its process group is killed (default 30)
    fail_closed = true                   # a crash or timeout blocks the call (default: fail open)
    files = ["hooks/lib"]                # more workspace files it runs (see below)
    format = "claude"                    # Claude Code's tool names and inputs (default: rein's)

A hook with ``events`` runs for every model-worker session; one without runs only where an
OAP profile binds it by name (``lifecycle.on_start`` is ``SessionStart``, ``on_end`` is
``SessionEnd``). A hook is code execution: from a project ``rein.toml`` it is withheld until
the user trusts that file (:mod:`rein.config.trust`), and trust binds the bytes of the
workspace files it runs: those its command line names, and those ``files`` adds (a script
it sources, a folder its script imports from; :mod:`rein.config.command_files`). The hook
then runs copies of those bytes, not the workspace files (:mod:`rein.config.command_seal`).
:func:`check_hooks` refuses a malformed
table (CFG004, with the line); :func:`hook_warnings` names the hooks that spawn a process on
every tool call, for ``rein config show``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

#: The five lifecycle events a hook may hear, in the order a session meets them.
HOOK_EVENTS = ("SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "SessionEnd")
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
_KEYS = ("command", "events", "fail_closed", "files", "format", "matcher", "timeout_seconds")
#: The tool names and argument shapes a hook may be shown (rein.tools.claude_tools).
FORMATS = ("rein", "claude")
#: Matchers that select every tool, as in Claude Code (not regular expressions).
EVERY_TOOL = ("", "*")

Bad = Callable[[Path, str, str, str, str | None], Exception]


def check_hooks(data: Mapping[str, Any], path: Path, bad: Bad) -> None:
    """Raise ``bad(...)`` (CFG004) for the first malformed ``[hooks.NAME]`` table."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise bad(path, "hooks", "hooks", "must be a table of [hooks.<name>]", None)
    for name, spec in hooks.items():
        where = f"hooks.{name}"
        command = spec.get("command") if isinstance(spec, dict) else None
        ok = isinstance(command, str) and command.strip() or (
            isinstance(command, list) and command and all(isinstance(c, str) for c in command))
        if not ok:
            raise bad(path, where, "command", "a hook needs a command (string or list)",
                      'for example: command = ["python", "hooks/redact.py"]')
        assert isinstance(spec, dict)
        unknown = sorted(set(spec) - set(_KEYS))
        if unknown:
            raise bad(path, where, unknown[0], "unknown key", "known keys: " + ", ".join(_KEYS))
        events = spec.get("events", [])
        if not isinstance(events, list) or not all(e in HOOK_EVENTS for e in events):
            raise bad(path, where, "events", f"must be a list of {', '.join(HOOK_EVENTS)}",
                      'for example: events = ["PreToolUse"] (names are case-sensitive)')
        matcher = spec.get("matcher")
        if matcher is not None:
            if not isinstance(matcher, str):
                raise bad(path, where, "matcher", "must be a string",
                          'for example: matcher = "shell" or "mcp__time__.*"')
            try:
                if matcher not in EVERY_TOOL:
                    re.compile(matcher)
            except re.error as exc:
                raise bad(path, where, "matcher", f"is not a regular expression: {exc}",
                          'exact names joined with |, or a regex such as "file_.*"') from None
        files = spec.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
            raise bad(path, where, "files", "must be a list of workspace paths",
                      'for example: files = ["hooks/lib.sh", "hooks/pylib"]')
        if spec.get("format", "rein") not in FORMATS:
            raise bad(path, where, "format", f"must be one of {', '.join(FORMATS)}",
                      'format = "claude" shows tools as Claude Code names them (Bash, Write, '
                      'file_path...)')
        if not isinstance(spec.get("fail_closed", False), bool):
            raise bad(path, where, "fail_closed", "must be true or false",
                      "true: a hook that crashes or times out blocks what it guards")
        timeout = spec.get("timeout_seconds", 30)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise bad(path, where, "timeout_seconds", "must be a positive number",
                      "for example: timeout_seconds = 10")


def hook_warnings(hooks: Mapping[str, Any]) -> list[str]:
    """One line per hook that runs on every tool call: a process spawn per call adds up."""
    out = []
    for name, spec in hooks.items():
        if not isinstance(spec, Mapping):
            continue
        events = [e for e in spec.get("events") or () if e in TOOL_EVENTS]
        if events and spec.get("matcher") in (None, *EVERY_TOOL):
            out.append(f"hook {name!r} has no matcher: it starts a process on every tool call "
                       f"({', '.join(events)}), file reads included; add matcher = "
                       '"shell|file_write" (the tools it is for)')
    return out
