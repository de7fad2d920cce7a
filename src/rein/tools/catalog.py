"""The built-in tools, their two spellings, and the JSON Schema of each tool's arguments.

AGS and OAP name the same tools differently; rein accepts both and offers the model the
spelling the node (or profile) used::

    AGS           OAP      what it does
    file_read     read     read a text file (optionally a line range)
    file_write    write    create or overwrite a file
    (none)        edit     replace an exact piece of text in a file
    file_search   search   regex search over files below a directory
    shell_exec    shell    run a shell command in the sandbox
    http_fetch    fetch    HTTP GET of one URL
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from rein.core.frozen import Frozen


class ToolKind(enum.StrEnum):
    """What a built-in tool does, whatever it is called."""

    READ = "read"  # fs:read
    WRITE = "write"  # fs:write
    EDIT = "edit"  # fs:write (reads the file it edits)
    SEARCH = "search"  # fs:read on the directory and each file searched
    SHELL = "shell"  # shell:exec, run under the sandbox backend
    FETCH = "fetch"  # net:fetch on the URL's origin


ALIASES: Mapping[str, ToolKind] = {
    "file_read": ToolKind.READ,
    "read": ToolKind.READ,
    "file_write": ToolKind.WRITE,
    "write": ToolKind.WRITE,
    "edit": ToolKind.EDIT,
    "file_search": ToolKind.SEARCH,
    "search": ToolKind.SEARCH,
    "shell_exec": ToolKind.SHELL,
    "shell": ToolKind.SHELL,
    "http_fetch": ToolKind.FETCH,
    "fetch": ToolKind.FETCH,
}

_DESCRIPTIONS: Mapping[ToolKind, str] = {
    ToolKind.READ: "Read a UTF-8 text file in the workspace. Paths are workspace-relative.",
    ToolKind.WRITE: "Create or overwrite a file in the workspace with the given content.",
    ToolKind.EDIT: (
        "Replace an exact piece of text in a workspace file. `old` must occur exactly once "
        "unless `replace_all` is true."
    ),
    ToolKind.SEARCH: (
        "Search files below a workspace directory for a regular expression; returns "
        "`path:line: text` for each match."
    ),
    ToolKind.SHELL: (
        "Run a shell command (sh -c) in the workspace, inside the node's sandbox. Returns the "
        "exit code, stdout and stderr."
    ),
    ToolKind.FETCH: "Fetch a URL with HTTP GET and return the status and the (truncated) body.",
}

# The names of the tools an MCP server offers start so ("mcp/<server>/<tool>"); kept here so
# that checking a node's tools does not import the MCP client.
MCP_PREFIX = "mcp/"
_PATH = {"type": "string", "description": "workspace-relative path"}
_SCHEMAS: Mapping[ToolKind, Mapping[str, Any]] = {
    ToolKind.READ: {
        "type": "object",
        "properties": {
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 1, "description": "first line (1-based)"},
            "limit": {"type": "integer", "minimum": 1, "description": "number of lines"},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    ToolKind.WRITE: {
        "type": "object",
        "properties": {"path": _PATH, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    ToolKind.EDIT: {
        "type": "object",
        "properties": {
            "path": _PATH,
            "old": {"type": "string", "description": "exact text to replace"},
            "new": {"type": "string", "description": "replacement text"},
            "replace_all": {"type": "boolean", "default": False},
        },
        "required": ["path", "old", "new"],
        "additionalProperties": False,
    },
    ToolKind.SEARCH: {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "regular expression (Python syntax)"},
            "path": {"type": "string", "description": "directory to search, default '.'"},
            "glob": {"type": "string", "description": "only files whose name matches, e.g. *.py"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    ToolKind.SHELL: {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    ToolKind.FETCH: {
        "type": "object",
        "properties": {"url": {"type": "string", "description": "http or https URL"}},
        "required": ["url"],
        "additionalProperties": False,
    },
}


class ToolDefinition(Frozen):
    """What the model is offered: a name, a description, and the arguments' JSON Schema."""

    name: str
    kind: ToolKind
    description: str
    parameters: Mapping[str, Any]


def kind_of(name: str) -> ToolKind | None:
    """The built-in tool a name refers to (either spelling), or None for an unknown name."""
    return ALIASES.get(name)


def definitions_for(names: Iterable[str]) -> tuple[ToolDefinition, ...]:
    """Definitions for the built-in tools among ``names``, in order, one per kind.

    When a node lists both spellings of one tool, the first one wins, so the model never sees
    two tools that do the same thing. Unknown names (MCP tools, custom tools) are skipped.
    """
    seen: set[ToolKind] = set()
    out: list[ToolDefinition] = []
    for name in names:
        kind = kind_of(name)
        if kind is None or kind in seen:
            continue
        seen.add(kind)
        out.append(
            ToolDefinition(
                name=name, kind=kind, description=_DESCRIPTIONS[kind], parameters=_SCHEMAS[kind]
            )
        )
    return tuple(out)


class ToolCall(Frozen):
    """A model's request to run a tool. ``id`` is the provider's call id."""

    id: str
    name: str
    arguments: Mapping[str, Any]


class ToolResult(Frozen):
    """What a tool returned, or why it did not run. ``content`` is what the model reads."""

    ok: bool
    content: str
    data: Mapping[str, Any] | None = None  # structured details for the trace (never secrets)
    refused: bool = False  # the permission/sandbox check said no (the tool never ran)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "content": self.content, "refused": self.refused}
        if self.data:
            out["data"] = dict(self.data)
        return out
