"""A profile session's MCP servers: which may start, who said so, and the task that hosts them.

A server runs a command (or reaches a URL) from the profile, so nothing starts before it is
answered (:func:`launch_answers`): a command line trusted by ``[mcp] trusted`` in a managed or
user ``rein.toml`` starts without asking; otherwise a person answers an ``mcp_launch``
approval naming the exact command line, and the session pauses until they do. Outside a run
there is nobody to ask, so the server is not launched. Only servers the effective profile may
use a tool of are offered at all (:func:`session_hub`). :class:`HubHost` starts and stops them
from one task, however the session ends.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.formats.globs import match_any
from rein.profiles.effective import EffectiveProfile
from rein.profiles.resolve import ResolvedProfile
from rein.tools.mcp import PREFIX, LaunchRequest, McpHub, servers_from_profile
from rein.workers.base import AttemptRequest, WorkerPaused


def session_hub(resolved: ResolvedProfile, effective: EffectiveProfile, *, workspace: Path,
                environ: Mapping[str, str] | None) -> McpHub | None:
    """The session's MCP servers: those the effective profile may use a tool of."""
    servers = [s for s in servers_from_profile(resolved.mcp_servers)
               if may_use(effective, s.name)]
    if not servers:
        return None
    return McpHub(servers, gate=effective.decide, profile=resolved.name, trust=resolved.trust,
                  workspace=workspace, confirm=None, environ=environ)


def may_use(effective: EffectiveProfile, server: str) -> bool:
    """Whether every tool allow set (profile, policy, node) can match a tool of ``server``."""
    probe = f"{PREFIX}{server}/x"
    return all(any(p.startswith(f"{PREFIX}{server}/") or match_any([p], probe) for p in s)
               for s in effective.tools.allow_sets)


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
