"""Claude Code's names for rein's tools, and its shape of their arguments, both ways.

A hook written for Claude Code selects tools by Claude Code's names and reads (and
rewrites) their arguments by Claude Code's keys. rein offers the same tools under its own
names, so a hook that speaks Claude Code is shown each call as Claude Code would show it,
and what it writes back is read the same way::

    Claude Code   rein (AGS / OAP)         arguments, Claude Code ← → rein
    Bash          shell_exec / shell       command; timeout (ms) ↔ timeout_seconds
    Read          file_read / read         file_path (absolute) ↔ path; offset; limit
    Write         file_write / write       file_path ↔ path; content
    Edit          edit                     file_path ↔ path; old_string ↔ old;
                                           new_string ↔ new; replace_all
    Grep          file_search / search     pattern; path (absolute) ↔ path; glob
    WebFetch      http_fetch / fetch       url
    mcp__s__t     mcp__s__t                as they are

Claude Code's ``file_path`` is absolute; rein's ``path`` is workspace-relative. A path
inside the workspace is translated both ways; one outside it is passed back as written, and
rein's permission check refuses it like any path outside the grants. Keys of Claude Code's
that rein's tools do not have (``description``, ``run_in_background``,
``dangerouslyDisableSandbox``, ``prompt``, Grep's ``output_mode``…) are dropped from a
rewrite: they would grant nothing, and the sandbox is rein's policy, not an argument. Claude
Code's ``Glob`` (file names by pattern) has no rein equivalent: a matcher naming it selects
no rein tool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.tools.catalog import ToolKind, kind_of

__all__ = ["CLAUDE_NAMES", "claude_name", "from_claude", "is_claude_name", "to_claude"]

#: Claude Code's name of each rein tool kind.
CLAUDE_NAMES: Mapping[ToolKind, str] = {
    ToolKind.SHELL: "Bash",
    ToolKind.READ: "Read",
    ToolKind.WRITE: "Write",
    ToolKind.EDIT: "Edit",
    ToolKind.SEARCH: "Grep",
    ToolKind.FETCH: "WebFetch",
}
_KINDS = {name: kind for kind, name in CLAUDE_NAMES.items()}
# rein key → Claude Code key, per kind; "path" is translated to an absolute file_path.
_KEYS: Mapping[ToolKind, Mapping[str, str]] = {
    ToolKind.SHELL: {"command": "command", "timeout_seconds": "timeout"},
    ToolKind.READ: {"path": "file_path", "offset": "offset", "limit": "limit"},
    ToolKind.WRITE: {"path": "file_path", "content": "content"},
    ToolKind.EDIT: {"path": "file_path", "old": "old_string", "new": "new_string",
                    "replace_all": "replace_all"},
    ToolKind.SEARCH: {"pattern": "pattern", "path": "path", "glob": "glob"},
    ToolKind.FETCH: {"url": "url"},
}


def claude_name(tool: str) -> str:
    """Claude Code's name of rein's tool ``tool`` (an MCP tool's is its own)."""
    kind = kind_of(tool)
    return tool if kind is None else CLAUDE_NAMES[kind]


def is_claude_name(name: str) -> bool:
    """Whether ``name`` is one of Claude Code's built-in tool names rein maps."""
    return name in _KINDS


def to_claude(tool: str, arguments: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """rein's arguments of a call to ``tool`` as Claude Code's tool_input."""
    kind = kind_of(tool)
    if kind is None:
        return dict(arguments)
    keys = _KEYS[kind]
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        theirs = keys.get(key)
        if theirs is None:
            continue
        if key == "timeout_seconds" and isinstance(value, (int, float)):
            value = round(value * 1000)
        elif key == "path" and isinstance(value, str):
            value = str(workspace / value) if value else str(workspace)
        out[theirs] = value
    if kind is ToolKind.SEARCH and "path" not in out:
        out["path"] = str(workspace)  # rein searches the workspace when none is given
    return out


def from_claude(tool: str, tool_input: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """Claude Code's tool_input (a hook's ``updatedInput``) as rein's arguments of ``tool``."""
    kind = kind_of(tool)
    if kind is None:
        return dict(tool_input)
    back = {theirs: ours for ours, theirs in _KEYS[kind].items()}
    out: dict[str, Any] = {}
    for key, value in tool_input.items():
        ours = back.get(key)
        if ours is None:
            continue
        if ours == "timeout_seconds" and isinstance(value, (int, float)) \
                and not isinstance(value, bool):
            value = value / 1000
        elif ours == "path" and isinstance(value, str):
            value = _relative(value, workspace)
        out[ours] = value
    return out


def _relative(path: str, workspace: Path) -> str:
    """A Claude Code path as rein's: workspace-relative when it lies inside the workspace."""
    if not os.path.isabs(path):
        return path
    root = os.path.normpath(str(workspace))
    here = os.path.normpath(path)
    if here == root:
        return "."
    if here.startswith(root + os.sep):
        return here[len(root) + 1:]
    return path  # outside: the permission check refuses it as written
