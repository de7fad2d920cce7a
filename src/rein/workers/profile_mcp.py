"""A profile session's MCP servers: which may start, who said so, and the task that hosts them.

A server runs a command (or reaches a URL) from the profile, so nothing starts before it is
answered (:func:`launch_answers`): a command line trusted by ``[mcp] trusted`` in a managed or
user ``rein.toml`` starts without asking; otherwise a person answers an ``mcp_launch``
approval naming the exact command line, and the session pauses until they do. Outside a run
there is nobody to ask, so the server is not launched. A server the effective profile may use
no tool of is neither asked about nor launched, and the notice names the rule that denies
them all (:func:`unusable`); a tool hidden at listing names its rule too (:func:`explain`).
:class:`HubHost` starts and stops them from one task, however the session ends.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.formats.globs import covers, match, match_any
from rein.profiles.effective import EffectiveProfile
from rein.profiles.resolve import ResolvedProfile
from rein.tools.mcp import PREFIX, LaunchRequest, McpHub, servers_from_profile
from rein.workers.base import AttemptRequest, WorkerPaused


def session_hub(resolved: ResolvedProfile, effective: EffectiveProfile, *, workspace: Path,
                environ: Mapping[str, str] | None) -> McpHub | None:
    """The session's MCP servers; those it may use no tool of are there as ``skipped``."""
    servers = servers_from_profile(resolved.mcp_servers)
    if not servers:
        return None
    return McpHub(servers, gate=effective.decide, profile=resolved.name, trust=resolved.trust,
                  workspace=workspace, confirm=None, environ=environ,
                  **grant_checks(effective))


def grant_checks(effective: EffectiveProfile) -> dict[str, Any]:
    """``unusable`` and ``explain`` of an :class:`McpHub` under ``effective``."""
    return {"unusable": lambda server: unusable(effective, server),
            "explain": lambda tool: explain(effective, tool)}


def unusable(effective: EffectiveProfile, server: str) -> str | None:
    """The rule that denies every tool of ``server``, said for a person; None when some
    tool of it may be granted. Conservative: None whenever it cannot be sure."""
    whole, prefix = f"{PREFIX}{server}/**", f"{PREFIX}{server}/"
    for pattern in effective.tools.deny:
        if covers(pattern, whole):
            return f"{_deny_source(effective, pattern)} denies {pattern!r}"
    for label, patterns in _allow_sets(effective):
        if not any(could_match(p, prefix) for p in patterns):
            return f"{label} ({', '.join(patterns) or 'nothing'}) grants none of its tools"
    if _ceiling(effective) == "deny":
        return "permissions.default is deny"
    for number, rule in _tool_rules(effective):
        pattern = str(rule.get("tool", "*"))
        if covers(pattern, whole):
            return (f"profile rule {number} ({pattern!r}) denies them"
                    if rule.get("decision") == "deny" else None)
        if could_match(pattern, prefix) and rule.get("decision") != "deny":
            return None
    return None


def explain(effective: EffectiveProfile, tool: str) -> str:
    """Which rule denies ``tool`` (``mcp/<server>/<tool>``), said for a person."""
    for pattern in effective.tools.deny:
        if match(pattern, tool):
            return f"denied by {_deny_source(effective, pattern)} {pattern!r}"
    for label, patterns in _allow_sets(effective):
        if not match_any(patterns, tool):
            return f"not in {label} ({', '.join(patterns) or 'nothing'})"
    if not effective.tools.permits(tool):
        return "excluded by the server's tools allow/deny"
    if _ceiling(effective) == "deny":
        return "permissions.default is deny"
    for number, rule in _tool_rules(effective):
        if match(str(rule.get("tool", "*")), tool):
            return f"denied by profile rule {number} ({rule.get('tool', '*')!r})"
    return "not granted by the effective profile"


def _allow_sets(effective: EffectiveProfile) -> list[tuple[str, tuple[str, ...]]]:
    labels = ("the profile's tools.allow", "rein's policy tools", "the node's requirements.tools")
    return list(zip(labels, effective.tools.allow_sets, strict=False))


def _deny_source(effective: EffectiveProfile, pattern: str) -> str:
    spec = effective.resolved.spec.get("tools") or {}
    if pattern in (spec.get("deny") or ()):
        return "the profile's tools.deny"
    if pattern in (f"{PREFIX}{s}/**" for s in effective.resolved.dropped_mcp_servers):
        return "the profile resolution (a server it drops)"
    return "rein's policy deny_tools"


def _ceiling(effective: EffectiveProfile) -> str:
    # An MCP tool has no permission category of its own: ``default`` is its ceiling.
    return str(effective.permissions.get("default", "ask"))


def _tool_rules(effective: EffectiveProfile) -> list[tuple[int, Mapping[str, Any]]]:
    """The rules that apply to a call as the hub's gate asks (any action, any target)."""
    return [(n, r) for n, r in enumerate(effective.rules, 1)
            if match_any([str(r.get("action", "*"))], "*")
            and match_any([str(r.get("target", "*"))], "*")]


def could_match(pattern: str, prefix: str) -> bool:
    """Whether some name that starts with ``prefix`` matches the glob ``pattern`` (the
    dialect of :mod:`rein.formats.globs`: ``*`` and ``?`` stay within a ``/`` segment,
    ``**`` crosses them). Run as a small automaton over the pattern, the prefix consumed
    one character at a time: any state left alive can still be completed."""
    tokens: list[str] = []
    i = 0
    while i < len(pattern):
        token = "**" if pattern.startswith("**", i) else pattern[i]
        tokens.append(token)
        i += len(token)

    def closure(states: set[int]) -> set[int]:
        todo, out = list(states), set(states)
        while todo:
            state = todo.pop()
            if state < len(tokens) and tokens[state] in ("*", "**") and state + 1 not in out:
                out.add(state + 1)
                todo.append(state + 1)
        return out

    states = closure({0})
    for char in prefix:
        step: set[int] = set()
        for state in states:
            if state >= len(tokens):
                continue
            token = tokens[state]
            if token == "**" or (token == "*" and char != "/"):
                step.add(state)
            elif (token == "?" and char != "/") or token == char:
                step.add(state + 1)
        states = closure(step)
        if not states:
            return False
    return True


def trusted_launches(config: Config) -> dict[str, str]:
    """``[mcp] trusted`` command lines (or URLs) from the managed and user ``rein.toml``,
    mapped to the file that trusts them. A project file cannot trust a launch: a cloned
    repository would otherwise approve its own servers."""
    out: dict[str, str] = {}
    for scope, path in config.files:
        if scope == "project":
            continue
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue  # load_config read it a moment ago; a file changed since trusts nothing
        for line in (data.get("mcp") or {}).get("trusted") or []:
            if isinstance(line, str):
                out.setdefault(line, path)
    return out


async def launch_answers(request: AttemptRequest, hub: McpHub, config: Config
                         ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every launch answered before anything starts: ``(notices, answers by server)``.
    Pauses (:class:`WorkerPaused`) while a person's answer is pending."""
    trusted = trusted_launches(config)
    notes: list[dict[str, Any]] = []
    answers: dict[str, str] = {}
    pending: list[tuple[str, str]] = []
    for server in hub.to_json()["servers"]:
        launch = server["launch"]
        line = " ".join(launch["command"]) if launch["command"] else str(launch["url"])
        name = server["name"]
        if server["status"] == "skipped":  # nobody is asked about what could not be used
            notes.append({"text": f"MCP server {name!r} {server['reason']}",
                          "mcp_server": name})
            continue
        if line in trusted:
            answers[name] = "accept"
            notes.append({"text": f"MCP server {name!r} launched without asking: "
                                  f"{line!r} is trusted by {trusted[line]}",
                          "mcp_server": name})
            continue
        if request.session is None:
            answers[name] = "decline"
            notes.append({"text": f"MCP server {name!r} not launched: no approval channel "
                                  "outside a run, and rein.toml does not trust "
                                  f"{line!r}", "mcp_server": name})
            continue
        material = {**{k: v for k, v in launch.items() if k != "digest"},
                    "prompt": f"launch MCP server {name!r} for profile "
                              f"{launch['profile']} ({launch['trust']}): {line}"}
        approval_id, answer = await request.session.ask(name, material, kind="mcp_launch")
        if answer is None:
            pending.append((approval_id, name))
            continue
        answers[name] = answer
        if answer != "accept":
            notes.append({"text": f"MCP server {name!r}: a person declined its launch",
                          "mcp_server": name})
    if pending:
        first, name = pending[0]
        raise WorkerPaused("approval", first, {"approval_id": first, "mcp_server": name,
                                               "waiting": [a for a, _ in pending]})
    return notes, answers


class HubHost:
    """Runs an ``McpHub`` in a task of its own, so the servers are started and stopped by one
    task (the SDK's task groups require it) however the session ends: finished, paused,
    cancelled, or abandoned by its consumer; at the latest when the event loop shuts down."""

    def __init__(self, hub: McpHub | None, answers: Mapping[str, str]) -> None:
        self.hub = hub
        self.answers = dict(answers)
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> McpHub | None:
        if self.hub is None:
            return None
        self.hub.confirm = self._confirm
        self._task = asyncio.get_running_loop().create_task(self._host())
        await self._ready.wait()
        if self._error is not None:
            raise self._error
        return self.hub

    async def _confirm(self, launch: LaunchRequest) -> str:
        # Every launch was answered before the hub starts: an unknown one is not launched.
        return self.answers.get(launch.server, "decline")

    async def _host(self) -> None:
        assert self.hub is not None
        try:
            async with self.hub:
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - handed to the session that waits
            self._error = exc
        finally:
            self._ready.set()

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
