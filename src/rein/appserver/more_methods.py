"""The app-server methods beyond threads and turns that an integrator meets first: the
models rein routes to, the account (none: rein holds no Codex login), the threads this
connection has loaded, a thread's turns page by page, the configuration as Codex names it,
skills (rein has none), the lifecycle hooks rein.toml configures, a thread's MCP servers,
a fuzzy search of file names under given roots; and two that start a turn on the thread,
under its sandbox, permissions and approvals like any turn: a compaction and a review.

Each answers with Codex's result type (0.163.0). Their params are checked like any
request's (THREAD404 for an unknown thread).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.appserver import wire
from rein.appserver.wire import MethodError
from rein.errors import ConfigError
from rein.protocol import threads

if TYPE_CHECKING:
    from rein.appserver.handling import Connection

_FUZZY_LIMIT = 50  # results at most, best first
_FUZZY_FILES = 20_000  # names looked at, at most, per search
_SKIPPED_DIRS = frozenset({".git", ".rein", ".venv", "node_modules", "__pycache__"})


def _page(params: Mapping[str, Any], total: int, default: int = 50) -> tuple[int, int]:
    """(start, end) of the page ``cursor``/``limit`` ask for (a cursor is an offset)."""
    cursor = params.get("cursor")
    start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
    given = params.get("limit")
    limit = given if isinstance(given, int) and not isinstance(given, bool) else default
    return start, min(total, start + max(1, limit))


def _next(end: int, total: int) -> str | None:
    return str(end) if end < total else None


async def model_list(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """The models rein.toml's tiers route to (``standard`` is the default), as Codex's
    ``Model``: rein asks no reasoning effort of them, so each offers ``none`` only."""
    tiers = c.harness.config.get("tiers") or {}
    data = []
    for tier, route in tiers.items() if isinstance(tiers, Mapping) else ():
        if not isinstance(route, Mapping) or not route.get("model"):
            continue
        model = str(route["model"])
        data.append({"id": model, "model": model, "displayName": model,
                     "description": f"tier {tier} (provider {route.get('provider') or '?'})",
                     "hidden": False, "isDefault": tier == "standard",
                     "defaultReasoningEffort": "none", "supportedReasoningEfforts": [],
                     "inputModalities": ["text"]})
    start, end = _page(params, len(data))
    return {"data": data[start:end], "nextCursor": _next(end, len(data))}


async def account_read(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """No account: rein's providers hold their own keys (rein.toml), no Codex login."""
    return {"account": None, "requiresOpenaiAuth": False}


async def thread_loaded_list(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """The threads this connection started, resumed, forked or read, in that order."""
    loaded = list(c.loaded)
    start, end = _page(params, len(loaded))
    return {"data": loaded[start:end], "nextCursor": _next(end, len(loaded))}


async def thread_unsubscribe(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """Stop telling this connection about a thread: ``unsubscribed`` (then
    ``notSubscribed``), or ``notLoaded`` for one it never loaded. As in Codex the thread
    stays loaded (``thread/loaded/list``); its turns run on, recorded, and
    ``thread/resume`` follows it again."""
    thread_id = _thread_id(params)
    c.harness.sessions.thread(thread_id)  # THREAD404 for an unknown thread
    if thread_id not in c.loaded:
        return {"status": "notLoaded"}
    if thread_id in c.unsubscribed:
        return {"status": "notSubscribed"}
    c.unsubscribed.add(thread_id)
    return {"status": "unsubscribed"}


async def thread_turns_list(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """A thread's turns, oldest first (``sortDirection: desc``, newest first), a page at a
    time, each with its items unless ``itemsView`` is ``notLoaded``."""
    thread_id = _thread_id(params)
    c.harness.sessions.thread(thread_id)
    turns = [feed.turn(items=params.get("itemsView") != "notLoaded")
             for feed in threads.feeds(c.harness, thread_id)]
    if params.get("sortDirection") == "desc":
        turns.reverse()
    start, end = _page(params, len(turns), default=25)
    return {"data": turns[start:end], "nextCursor": _next(end, len(turns)),
            "backwardsCursor": str(start) if start > 0 else None}


async def config_read(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration a new thread gets, in Codex's names: the default tier's model and
    provider, ``on-request`` approvals and the ``workspace-write`` sandbox."""
    tiers = c.harness.config.get("tiers") or {}
    standard = tiers.get("standard") if isinstance(tiers, Mapping) else None
    route = standard if isinstance(standard, Mapping) else {}
    config = {"model": str(route.get("model") or "") or None,
              "model_provider": str(route.get("provider") or "") or None,
              "approval_policy": "on-request", "sandbox_mode": "workspace-write"}
    return {"config": config, "origins": {}, "layers": None}


async def skills_list(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """No skills: rein gives a node its tools by its profile, not by skill files."""
    cwds = params.get("cwds")
    roots = [str(p) for p in cwds if isinstance(p, str)] if isinstance(cwds, list) else []
    return {"data": [{"cwd": cwd, "skills": [], "errors": []}
                     for cwd in roots or [str(c.harness.workspace)]]}


async def fuzzy_file_search(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """Files under ``roots`` whose path holds the query's characters in order (a
    subsequence, case-insensitive), best first: contiguous and early matches score higher.
    Each root must be inside the workspace (as a thread's cwd must); a file a turn's file
    tools may not read (rein.toml's ``deny_paths``, ``read_roots``) is not shown."""
    query = params.get("query")
    roots = params.get("roots")
    if not isinstance(query, str) or not isinstance(roots, list):
        raise MethodError(wire.INVALID_PARAMS, "query (a string) and roots (a list) are "
                                               "required")
    workspace = c.harness.workspace.resolve()
    readable = c.harness.sessions.readable(c.harness.config)
    found: list[tuple[int, str, str, list[int]]] = []
    for root in roots:
        base = (workspace / str(root)).resolve()
        if base != workspace and workspace not in base.parents:
            raise MethodError(wire.INVALID_PARAMS, f"root {root} is outside the workspace")
        found += [f for f in _search(base, query)
                  if readable((base / f[2]).relative_to(workspace).as_posix())]
    found.sort(key=lambda f: (-f[0], f[2]))
    return {"files": [{"root": root, "path": path, "file_name": Path(path).name,
                       "match_type": "file", "score": score, "indices": indices}
                      for score, root, path, indices in found[:_FUZZY_LIMIT]]}


def _search(base: Path, query: str) -> list[tuple[int, str, str, list[int]]]:
    out: list[tuple[int, str, str, list[int]]] = []
    seen = 0
    for top, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(files):
            seen += 1
            if seen > _FUZZY_FILES:
                return out
            path = os.path.relpath(os.path.join(top, name), base)
            match = _match(path, query)
            if match is not None:
                out.append((match[0], str(base), path, match[1]))
    return out


def _match(path: str, query: str) -> tuple[int, list[int]] | None:
    """A score and the matched indices, or None: ``query`` a subsequence of ``path``."""
    lowered, indices, at = path.lower(), [], 0
    for ch in query.lower():
        at = lowered.find(ch, at)
        if at < 0:
            return None
        indices.append(at)
        at += 1
    runs = sum(1 for a, b in itertools.pairwise(indices) if b == a + 1)
    name_start = len(path) - len(os.path.basename(path))
    in_name = sum(1 for i in indices if i >= name_start)
    return 100 + 10 * runs + 5 * in_name - len(path), indices


async def hooks_list(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """The hooks of rein.toml that fire in every session (a project file's only once
    trusted: the configuration holds no other), one entry per event each hears, for each
    ``cwd`` (rein's hooks are the workspace's, whatever the directory)."""
    import hashlib
    import json

    workspace = c.harness.workspace.resolve()
    hooks: list[dict[str, Any]] = []
    for spec in c.harness.config.hooks.values():
        source = Path(spec.source) if spec.source else workspace / "rein.toml"
        digest = hashlib.sha256(json.dumps(
            [list(spec.command), dict(spec.files)]).encode()).hexdigest()
        inside = source.resolve() == workspace or workspace in source.resolve().parents
        for event in spec.events:
            hooks.append({
                "key": f"{spec.name}:{event}", "eventName": event[:1].lower() + event[1:],
                "handlerType": "command", "command": " ".join(spec.command),
                "matcher": spec.matcher, "timeoutSec": int(spec.timeout_seconds),
                "source": "project" if inside else "user", "sourcePath": str(source),
                "enabled": True, "isManaged": False, "currentHash": f"sha256:{digest}",
                "displayOrder": len(hooks), "trustStatus": "trusted", "pluginId": None,
                "statusMessage": None})
    cwds = params.get("cwds")
    roots = [str(p) for p in cwds if isinstance(p, str)] if isinstance(cwds, list) else []
    return {"data": [{"cwd": cwd, "hooks": hooks, "warnings": [], "errors": []}
                     for cwd in roots or [str(workspace)]]}


_LAUNCH_STATUS = {"running": "connected", "declined": "cancelled", "failed": "failed"}


async def mcp_server_status_list(c: Connection, params: Mapping[str, Any]
                                 ) -> dict[str, Any]:
    """The MCP servers of a thread (``threadId``): those an editor's session launched,
    as the thread recorded them (``mcpLaunches``: connected, cancelled when declined, or
    failed). rein.toml declares no server of its own (an OAP profile's start with the turn
    that uses them), so without a thread the list is empty. Their tools are not listed:
    rein reaches a server only within a turn."""
    thread_id = params.get("threadId")
    launches: list[Any] = []
    if isinstance(thread_id, str) and thread_id:
        launches = list(c.harness.sessions.thread(thread_id).data.get("mcpLaunches") or ())
    latest: dict[str, Mapping[str, Any]] = {}
    for launch in launches:
        if isinstance(launch, Mapping) and launch.get("server"):
            latest[str(launch["server"])] = launch
    name = params.get("serverName")
    data: list[dict[str, Any]] = [
        {"name": server, "tools": {}, "resources": [], "resourceTemplates": [],
         "authStatus": "unsupported", "serverInfo": None, "httpOrigin": None,
         "pluginId": None, "toolsError": None,
         "runtimeStatus": _LAUNCH_STATUS.get(str(launch.get("status")), "failed")}
        for server, launch in latest.items() if name in (None, server)]
    start, end = _page(params, len(data))
    return {"data": data[start:end], "nextCursor": _next(end, len(data))}


async def thread_compact_start(c: Connection, params: Mapping[str, Any]
                               ) -> dict[str, Any]:
    """A turn that compacts the thread: ``PreCompact`` hooks first (a block refuses it,
    THREAD011), then the model's summary of the thread, which the next turns carry in
    place of the earlier ones. Its notifications follow the (empty) result, as in Codex."""
    turn = await c.harness.sessions.compact(c.harness.config, _thread_id(params))
    c.then(lambda: c.run_turn(turn))
    return {}


_REVIEW = ("Review {what}. Do not change anything: read the code and the diff, and report "
           "what is wrong, most important first, each finding with its file and line and "
           "why it matters. If nothing is wrong, say so.")


def _review_text(target: Any) -> str:
    kind = target.get("type") if isinstance(target, Mapping) else None
    match kind:
        case "uncommittedChanges":
            return _REVIEW.format(what="the uncommitted changes of the working tree (staged, "
                                  "unstaged and untracked files: git status, git diff HEAD)")
        case "baseBranch" if isinstance(target.get("branch"), str) and target["branch"]:
            branch = target["branch"]
            return _REVIEW.format(what=f"the changes of the current branch against "
                                  f"{branch} (git diff {branch}...HEAD)")
        case "commit" if isinstance(target.get("sha"), str) and target["sha"]:
            title = f" ({target['title']})" if isinstance(target.get("title"), str) else ""
            return _REVIEW.format(what=f"the changes of commit {target['sha']}{title} "
                                  f"(git show {target['sha']})")
        case "custom" if isinstance(target.get("instructions"), str) and \
                target["instructions"].strip():
            return str(target["instructions"])
    raise MethodError(wire.INVALID_PARAMS, "target must be a review target: "
                      "uncommittedChanges, baseBranch (branch), commit (sha) or custom "
                      "(instructions)")


async def review_start(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """A review, inline: a turn of the thread whose brief asks the model to review the
    target and change nothing, under the thread's sandbox, permissions and approvals like
    any turn. ``delivery: detached`` (deprecated in Codex) is refused: start a thread,
    then review inline."""
    thread_id = _thread_id(params)
    if params.get("delivery") not in (None, "inline"):
        raise ConfigError("review/start delivery detached is not supported",
                          code="THREAD007", hint="start a thread (thread/start), then "
                          "review inline on it")
    text = _review_text(params.get("target"))
    turn = await c.harness.sessions.begin_turn(thread_id, [{"type": "text", "text": text}])
    c.then(lambda: c.run_turn(turn))
    return {"turn": {"id": turn.turn_id, "items": [], "status": "inProgress"},
            "reviewThreadId": thread_id}


def _thread_id(params: Mapping[str, Any]) -> str:
    value = params.get("threadId")
    if not isinstance(value, str) or not value:
        raise MethodError(wire.INVALID_PARAMS, "threadId is required")
    return value


METHODS = {
    "model/list": model_list, "account/read": account_read,
    "thread/loaded/list": thread_loaded_list, "thread/unsubscribe": thread_unsubscribe,
    "thread/turns/list": thread_turns_list, "config/read": config_read,
    "skills/list": skills_list, "fuzzyFileSearch": fuzzy_file_search,
    "hooks/list": hooks_list, "mcpServerStatus/list": mcp_server_status_list,
    "thread/compact/start": thread_compact_start, "review/start": review_start,
}
