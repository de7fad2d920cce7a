"""The app-server methods beyond threads and turns that an integrator meets first: the
models rein routes to, the account (none: rein holds no Codex login), the threads this
connection has loaded, a thread's turns page by page, the configuration as Codex names it,
skills (rein has none), and a fuzzy search of file names under given roots.

Each reads the harness and answers with Codex's result type (0.163.0); none changes
anything. Their params are checked like any request's (THREAD404 for an unknown thread).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.appserver import wire
from rein.appserver.wire import MethodError
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
    Each root must be inside the workspace (as a thread's cwd must)."""
    query = params.get("query")
    roots = params.get("roots")
    if not isinstance(query, str) or not isinstance(roots, list):
        raise MethodError(wire.INVALID_PARAMS, "query (a string) and roots (a list) are "
                                               "required")
    workspace = c.harness.workspace.resolve()
    found: list[tuple[int, str, str, list[int]]] = []
    for root in roots:
        base = (workspace / str(root)).resolve()
        if base != workspace and workspace not in base.parents:
            raise MethodError(wire.INVALID_PARAMS, f"root {root} is outside the workspace")
        found += _search(base, query)
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
}
