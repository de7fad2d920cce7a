"""A tool call as a Codex item: which item type it is, and how its result closes it.

``shell_exec`` is a ``commandExecution`` (its output and exit code parsed from the tool's
result: ``aggregatedOutput`` is what the command printed, stdout then stderr, without the
report around it the model reads), a file write or edit a ``fileChange``, any other tool an ``mcpToolCall`` of server
``rein``. A result refused because a person declined the call closes the item
``declined``; another refusal or failure closes it ``failed``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from rein.formats.canonical import canonical_json

SHELL = frozenset({"shell_exec", "shell"})
FILES = frozenset({"file_write", "write", "edit"})
_EXIT = re.compile(r"exit code: (-?\d+)")


def call_item(item_id: str, name: str, args: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    """The item a tool call starts (``inProgress``)."""
    if name in SHELL:
        return {"type": "commandExecution", "id": item_id,
                "command": str(args.get("command") or ""), "cwd": cwd,
                "commandActions": command_actions(str(args.get("command") or "")),
                "status": "inProgress", "source": "agent"}
    if name in FILES:
        text = str(args.get("content") or args.get("new") or "")
        diff = "".join(f"+{line}\n" for line in text.splitlines())
        kind = "update" if name == "edit" else "add"
        return {"type": "fileChange", "id": item_id, "status": "inProgress",
                "changes": [{"path": str(args.get("path") or ""), "kind": {"type": kind},
                             "diff": diff}]}
    return {"type": "mcpToolCall", "id": item_id, "server": "rein", "tool": name,
            "arguments": dict(args), "status": "inProgress"}


def finish_call(item: dict[str, Any], data: Mapping[str, Any], took_ms: int
                ) -> tuple[bool, str]:
    """Close ``item`` with the tool's result ``data``; (ok, the result's text)."""
    ok = bool(data.get("ok"))
    content = str(data.get("content") or "")
    declined = bool(data.get("refused")) and "declined" in content
    status = "declined" if declined else "completed" if ok else "failed"
    if item["type"] == "commandExecution":
        exit_code = _EXIT.search(content)
        item.update(status=status, aggregatedOutput=output_of(content), durationMs=took_ms,
                    exitCode=int(exit_code.group(1)) if exit_code else None)
    elif item["type"] == "fileChange":
        item["status"] = status
    else:  # mcpToolCall knows no `declined`
        item.update(status="completed" if ok else "failed", durationMs=took_ms)
        if ok:
            item["result"] = {"content": [{"type": "text", "text": content}],
                              "structuredContent": None}
        else:
            item["error"] = {"message": content}
    return ok, content


_READ = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat"})
_LIST = frozenset({"ls", "tree", "find", "fd"})
_SEARCH = frozenset({"grep", "rg", "ag", "egrep", "fgrep", "git-grep"})
_SEPARATORS = frozenset({"&&", "||", ";"})
# What a shell reads as more than words and the separators above: substitutions and
# expansions, a line break (another command), a comment. A command holding one is unknown.
_SHELL_SYNTAX = re.compile(r"[`$#\n\r]")
_OPERATOR = re.compile(r"[();<>|&]+")


def command_actions(command: str) -> list[dict[str, Any]]:
    """What a shell command does, best effort, as Codex's ``CommandAction`` list (a UI
    shows "read x", "search y"): each ``&&``/``||``/``;`` part that reads a file, lists a
    directory or searches, else one ``unknown`` action for the whole command. A person
    approving the command reads these: anything that could run another program is unknown."""
    if _SHELL_SYNTAX.search(command):
        return [{"type": "unknown", "command": command}]
    try:  # operators are tokens of their own, written with or without spaces (`a;b`)
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return [{"type": "unknown", "command": command}]
    parts: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            parts.append([])
        elif _OPERATOR.fullmatch(word):  # a pipe, a redirection, a subshell, `&`
            return [{"type": "unknown", "command": command}]
        else:
            parts[-1].append(word)
    actions = [_action(part) for part in parts if part and part[0] not in ("cd", "true")]
    if not actions or any(a is None for a in actions):
        return [{"type": "unknown", "command": command}]
    return [a for a in actions if a is not None]


# Options by which a reader, lister or searcher runs another program or writes a file
# (find's -exec and -delete, fd's --exec, rg's --pre, a pager, tree's -o, less's +command):
# a command using one is unknown, not a read, listing or search. A word is matched by its
# name before any "=", and a short option by its first letters (``-xrm``).
_ACTS = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
             "-fprintf", "-fls"),
    "fd": ("-x", "--exec", "-X", "--exec-batch"),
    "rg": ("--pre", "--search-zip", "-z"),
    "ag": ("--pager", "-z", "--search-zip"),
    "git-grep": ("-O", "--open-files-in-pager"),
    "bat": ("--pager",),
    "tree": ("-o",),
}


def _acts(program: str, words: list[str]) -> bool:
    """Whether ``words`` (a command's arguments) make ``program`` run or write more."""
    if program in ("less", "more") and any(w.startswith("+") for w in words):
        return True  # less's "+cmd" runs a command of its own, "!cmd" a shell's
    options = _ACTS.get(program, ())
    for word in words:
        name = word.split("=", 1)[0]
        if name in options or (word[:2] in options and not word.startswith("--")):
            return True
    return False


def _action(words: list[str]) -> dict[str, Any] | None:
    program, operands = words[0], [w for w in words[1:] if not w.startswith("-")]
    if _acts(program, words[1:]):
        return None
    text = shlex.join(words)
    if program in _READ and len(operands) == 1:
        path = operands[0]
        return {"type": "read", "command": text, "name": path.rsplit("/", 1)[-1],
                "path": path}
    if program in _LIST and len(operands) <= 1:
        return {"type": "listFiles", "command": text,
                "path": operands[0] if operands else None}
    if program in _SEARCH and 1 <= len(operands) <= 2:
        return {"type": "search", "command": text, "query": operands[0],
                "path": operands[1] if len(operands) == 2 else None}
    return None


_STDOUT, _STDERR = "--- stdout ---\n", "\n--- stderr ---\n"
_TRUNCATED = re.compile(r"\n\[output truncated at \d+ bytes\]$")


def output_of(content: str) -> str:
    """What the command printed (stdout, then stderr), from the shell tool's report to the
    model (``exit code: N``, notes, ``--- stdout ---``, ``--- stderr ---``); a result of
    another shape (a refusal) is shown as it is."""
    head, marker, rest = content.partition(_STDOUT)
    if not marker or not _EXIT.search(head):
        return content
    rest = _TRUNCATED.sub("", rest)
    stdout, marker, stderr = rest.partition(_STDERR)
    if not marker:
        return content
    if stdout and stderr and not stdout.endswith("\n"):
        stdout += "\n"
    return stdout + stderr


def call_digest(name: str, arguments: Mapping[str, Any]) -> str:
    """The digest an approval of this exact call is keyed by (see
    :func:`rein.workers.tool_calls.action_digest`); arguments as recorded."""
    action = {"tool": name, "arguments": dict(arguments)}
    return "sha256:" + hashlib.sha256(canonical_json(action)).hexdigest()


def shown_call(prompt: str) -> tuple[str, Mapping[str, Any]]:
    """The tool and arguments a tool-call question shows (``name {json}``, possibly cut)."""
    name, _, shown = prompt.partition(" ")
    try:
        args = json.loads(shown)
    except ValueError:
        args = {}
    return name, args if isinstance(args, Mapping) else {}


def public(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item as sent: without the fold's own bookkeeping (keys starting with ``_``)."""
    return {k: v for k, v in item.items() if not k.startswith("_")}
