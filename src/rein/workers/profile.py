"""An OAP profile as the worker of a node: the model loop, run as that profile.

A node names its profile with ``x-rein-profile`` (a profile name found by discovery, or a
path relative to the workspace); see ``docs/profiles-as-workers.md``. :class:`ProfileWorker`
wraps a model worker: nodes without a profile go to it unchanged; for a node with one, the
session is composed like this, before the first model call:

1. **resolve** the profile (``resolve_profile``) and intersect it with rein's policy and the
   node's requirements (``effective_profile``): tools and permissions intersect, budgets take
   the minimum; the effective profile, with every adjustment, is recorded as a notice;
2. **permissions**: the profile's grants become one more ceiling of the model loop
   (:mod:`rein.workers.grants`), so a call must pass node ∩ profile ∩ policy ∩ sandbox;
3. **budgets**: the attempt's budget is lowered to the profile's ``max_tool_calls``,
   ``max_turns``, ``timeout_seconds`` and ``max_cost_usd`` where those are smaller;
4. **model**: the tier routing chooses the model. The profile's own choice is used only when
   no routing profile is set and it names a model of this worker's provider; otherwise the
   profile's request is recorded next to what served it;
5. **prompt**: ``assemble_prompt`` with the node's brief as the task; learned state is
   rendered inside the untrusted block, never as instructions;
6. **session tools** (:mod:`rein.workers.session_tools`): the profile's MCP servers, each
   launched only after a person accepted an ``mcp_launch`` approval naming its command line
   (or ``[mcp] trusted`` in a managed or user ``rein.toml`` lists that command line), and
   stopped when the attempt ends, pauses or is cancelled; memory tools when a store is
   granted; ``note_learning`` for learned state with evidence.

A bad profile (missing, invalid, or refusing a tool the node needs) is found before
anything is spent: :meth:`ProfileWorker.refuse_node` is asked by the engine's pre-flight and
the node is ``blocked`` with code ``PROFILE001``–``PROFILE003``.

When the loop ends (success or failure), the session's measured facts and what it noted
with verified evidence become a proposed state delta (``draft_delta``), written to ``.rein/profiles/deltas/`` and named in the
attempt record with the ``rein profile apply`` command that would apply it. The profile file
itself is never written by a session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import tomllib
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.core.failures import FailureClass
from rein.core.usage import Budget
from rein.errors import ReinError
from rein.formats.redaction import known_secrets
from rein.tools.mcp import PREFIX, McpHub, servers_from_profile
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, WorkerPaused
from rein.workers.grants import spellings
from rein.workers.model import SYSTEM_PROMPT, ModelWorker, render_brief
from rein.workers.session_tools import Learning, SessionTools

DELTAS_DIR = Path(".rein") / "profiles" / "deltas"
_OUTCOMES = {None: "completed", FailureClass.TIMEOUT: "timeout"}


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ProfileWorker:
    """A model worker that serves nodes naming an OAP profile as that profile."""

    name = "model"

    def __init__(self, inner: ModelWorker, *, workspace: Path, config: Config,
                 now: Callable[[], datetime] = _utc_now,
                 environ: Mapping[str, str] | None = None) -> None:
        self.inner = inner
        self.workspace = Path(workspace)
        self.config = config
        self.now = now
        self.environ = environ

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def tiers(self) -> frozenset[str]:
        return self.inner.tiers

    def can_serve(self, request: AttemptRequest) -> bool:
        if request.profile is None:
            return self.inner.can_serve(request)
        # MCP tools come from the profile's servers; pre-flight checked the profile has them.
        built_in = tuple(t for t in request.tools if not t.startswith(PREFIX))
        return self.inner.can_serve(dataclasses.replace(request, tools=built_in))

    def provides_tool(self, name: str, node: Mapping[str, Any]) -> bool:
        """MCP tools only through the node's own profile: true for ``mcp/<server>/<tool>``
        when the node names a profile that resolves and declares ``<server>``."""
        if not name.startswith(PREFIX) or name.count("/") < 2:
            return False
        server = name.split("/")[1]
        return server in profile_mcp_servers(node, workspace=self.workspace, config=self.config)

    def provides_mcp_server(self, name: str, node: Mapping[str, Any]) -> bool:
        """Only through the node's own profile: true when the node names a profile that
        resolves and declares server ``name`` (a node without one gets no MCP server here)."""
        return name in profile_mcp_servers(node, workspace=self.workspace, config=self.config)

    def refuse_node(self, nid: str, node: Mapping[str, Any]) -> tuple[str, str] | None:
        """Pre-flight: ``(code, message)`` when the node's profile cannot serve it."""
        return profile_refusal(nid, node, workspace=self.workspace, config=self.config)

    def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        if request.profile is None:
            return self.inner.run(request)
        return self._session(request)

    async def _session(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        from rein.profiles import (
            Policy,
            assemble_prompt,
            effective_profile,
            resolve_profile,
        )
        from rein.profiles.memory import open_stores

        started = self.now()
        try:
            resolved = resolve_profile(str(request.profile), workspace=self.workspace,
                                       config=self.config)
            effective = effective_profile(resolved, Policy.from_config(self.config),
                                          node_requirements(request))
            stores = open_stores(effective, self.workspace, self.environ) \
                if effective.memory_mode != "off" else {}
        except ReinError as exc:
            # Pre-flight refuses a bad profile; this is a profile changed since then.
            yield AttemptResult(failure=FailureClass.PERMISSION_DENIED, message=(
                f"profile {request.profile!r} cannot serve node {request.node_id}: "
                f"{exc.code}: {exc.message}"))
            return
        request = dataclasses.replace(request, budget=narrow_budget(request.budget,
                                                                    effective.budgets))
        worker, model_note = self._worker_for(effective, request)
        yield Item(kind=ItemKind.NOTICE, data={
            "text": f"served as profile {resolved.name} (revision {resolved.revision})",
            "profile": effective.to_json(), "model": model_note})
        brief = render_brief(request)
        system = assemble_prompt(effective, task_brief=brief) + "\n" + SYSTEM_PROMPT
        user = "Do the task described under “Task”, then call `submit_outputs`."
        # Recorded so a reader of the trace sees what the model was told (skills included).
        yield Item(kind=ItemKind.NOTICE, data={"text": "system prompt assembled",
                                               "system_prompt": system})
        hub = self._hub(resolved, effective)
        answers: dict[str, str] = {}
        if hub is not None:
            notes, answers = await self._launch_answers(request, hub)
            for note in notes:
                yield Item(kind=ItemKind.NOTICE, data=note)
        extra = SessionTools(stores=stores, material=brief, now=self.now,
                             source=f"session {request.run_id}/{request.node_id}"
                                    f"#{request.attempt}")
        result: AttemptResult | None = None
        async with _HubHost(hub, answers) as running:
            if running is not None:
                extra.hub = running
                yield Item(kind=ItemKind.NOTICE, data={
                    "text": "MCP servers for this session", "mcp": running.to_json()})
            async for out in worker.loop(request, ceilings=[(f"profile {resolved.name}",
                                                             effective.as_policy())],
                                         system=system, user=user, extra=extra):
                if isinstance(out, AttemptResult):
                    result = out
                    break
                yield out
        if result is None:
            return
        record: dict[str, Any] = {"name": resolved.name, "revision": resolved.revision,
                                  "digest": resolved.digest}
        learning = extra.learning()
        try:
            path, delta, skipped = self._write_delta(resolved, request, result, started,
                                                     learning)
        except (ReinError, OSError) as exc:
            record["delta_error"] = f"{getattr(exc, 'code', 'OSError')}: {exc}"
        else:
            record["delta"] = str(path.relative_to(self.workspace))
            record["apply"] = f"rein profile apply {resolved.source} {record['delta']}"
            if skipped:
                record["skipped"] = list(skipped)
            yield Item(kind=ItemKind.NOTICE, data={
                "text": f"proposed a state delta for profile {resolved.name}: "
                        f"{record['apply']}",
                "delta": record["delta"], "operations": len(delta.get("operations") or []),
                "proposals": len(delta.get("proposals") or []), "skipped": list(skipped)})
        yield dataclasses.replace(result, extra={**result.extra, "x-rein-profile": record})

    def _hub(self, resolved: Any, effective: Any) -> McpHub | None:
        """The session's MCP servers: those the effective profile may use a tool of."""
        servers = [s for s in servers_from_profile(resolved.mcp_servers)
                   if _may_use(effective, s.name)]
        if not servers:
            return None
        return McpHub(servers, gate=lambda name: effective.decide(name),
                      profile=resolved.name, trust=resolved.trust, workspace=self.workspace,
                      confirm=None, environ=self.environ)

    async def _launch_answers(self, request: AttemptRequest, hub: McpHub
                              ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Every launch answered before anything starts: trusted by rein.toml, or a person's
        answer from the approval queue. Pauses (``WorkerPaused``) while one is pending."""
        trusted = trusted_launches(self.config)
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

    def _worker_for(self, effective: Any, request: AttemptRequest
                    ) -> tuple[ModelWorker, dict[str, Any]]:
        """The model worker for the session, and how the model was chosen (recorded)."""
        inner = self.inner
        choice = effective.model
        note = {"requested": choice.to_json(), "served": f"{inner.provider.name}/{inner.model}"}
        if request.routed is None and choice.id and choice.provider == inner.provider.name \
                and choice.id != inner.model:
            worker = ModelWorker(provider=inner.provider, model=choice.id, stream=inner.stream,
                                 approver=inner.approver, ask=inner.ask, denied=inner.denied,
                                 policy=inner.policy, tiers=inner.tiers,
                                 require_boundary=inner.require_boundary,
                                 http_client=inner.http_client, clock=inner.clock,
                                 max_steps=inner.max_steps)
            note["served"] = f"{inner.provider.name}/{choice.id}"
            note["rule"] = "the profile's model, on this worker's provider"
            return worker, note
        note["rule"] = ("the tier routing decides" if request.routed is not None
                        else "this worker's model (the profile names another provider)")
        return inner, note

    def _write_delta(self, resolved: Any, request: AttemptRequest, result: AttemptResult,
                     started: datetime, learning: Learning
                     ) -> tuple[Path, dict[str, Any], tuple[str, ...]]:
        from rein.profiles.generate import SessionInfo, draft_delta

        ended = self.now()
        u = result.usage
        info = SessionInfo(
            id=f"{request.run_id}/{request.node_id}#{request.attempt}", started_at=started,
            ended_at=ended, model_used=(f"{result.routed.provider}/{result.routed.model}"
                                        if result.routed else None),
            turns=u.agent_steps, tool_calls=u.tool_calls, cost_usd=u.cost_usd,
            outcome=_OUTCOMES.get(result.failure, "error"))  # type: ignore[arg-type]
        summary = (f"node {request.node_id} attempt {request.attempt}: "
                   + (result.message or ("succeeded" if result.failure is None
                                         else result.failure.value)))
        # The node's secrets and every known secret of rein's environment (provider keys):
        # learned state may quote a value the node was never handed (a file, a tool result).
        secrets = {name or "": value for value, name in (
            known_secrets(os.environ) | known_secrets(request.env)).pairs}
        secrets.update({n: request.env[n] for n in request.secret_names if request.env.get(n)})
        draft = draft_delta(resolved, session=info, summary=summary, secrets=secrets,
                            learned=learning.learned, threads=learning.threads,
                            proposals=learning.proposals, now=ended)
        delta, skipped = draft.delta, (*learning.skipped, *draft.skipped)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node_id)
        path = self.workspace / DELTAS_DIR / request.run_id / f"{safe}-{request.attempt}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(delta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path, delta, skipped


def node_requirements(request: AttemptRequest) -> Any:
    """The node's requirements as the profile API reads them (tools in both spellings, so
    an AGS ``file_read`` meets an OAP ``read``)."""
    from rein.profiles import NodeRequirements

    tools = tuple(dict.fromkeys(n for t in request.tools for n in spellings(t)))
    b = request.budget
    return NodeRequirements(
        tools=tools, permissions=tuple(request.permissions), network=request.network,
        workspace=request.workspace_access, max_tool_calls=b.max_tool_calls,
        max_cost_usd=b.max_cost_usd, max_wall_clock_seconds=b.max_wall_clock_seconds,
        max_agent_steps=b.max_agent_steps)


def narrow_budget(budget: Budget, profile: Mapping[str, Any]) -> Budget:
    """The attempt's budget lowered to the profile's limits (``None`` = no limit)."""
    def low(a: Any, b: Any) -> Any:
        present = [v for v in (a, b) if v is not None]
        return min(present) if present else None

    return dataclasses.replace(
        budget,
        max_tool_calls=low(budget.max_tool_calls, profile.get("max_tool_calls")),
        max_agent_steps=low(budget.max_agent_steps, profile.get("max_turns")),
        max_wall_clock_seconds=low(budget.max_wall_clock_seconds,
                                   profile.get("timeout_seconds")),
        max_cost_usd=low(budget.max_cost_usd, profile.get("max_cost_usd")))


class _HubHost:
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

    async def _confirm(self, launch: Any) -> str:
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


def _may_use(effective: Any, server: str) -> bool:
    """Whether every tool allow set (profile, policy, node) can match a tool of ``server``."""
    from rein.formats.globs import match_any

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


def profile_mcp_servers(node: Mapping[str, Any], *, workspace: Path,
                        config: Config) -> frozenset[str]:
    """The MCP servers node's ``x-rein-profile`` declares (after resolution drops those with
    an unset variable); empty when it names no profile or the profile does not resolve (that
    is :func:`profile_refusal`'s PROFILE001)."""
    from rein.profiles import resolve_profile

    name = node.get("x-rein-profile")
    if name is None:
        return frozenset()
    try:
        resolved = resolve_profile(str(name), workspace=workspace, config=config)
    except ReinError:
        return frozenset()
    return frozenset(str(s["name"]) for s in resolved.mcp_servers)


def profile_refusal(nid: str, node: Mapping[str, Any], *, workspace: Path,
                    config: Config) -> tuple[str, str] | None:
    """Why node ``nid``'s ``x-rein-profile`` cannot serve it, before anything is spent:
    ``PROFILE001`` it does not resolve (missing, invalid, a required skill or store missing),
    ``PROFILE002`` it refuses a tool the node needs, ``PROFILE003`` it lacks an MCP server the
    node needs. ``None`` when it can, or the node names no profile."""
    from rein.profiles import NodeRequirements, Policy, effective_profile, resolve_profile

    name = node.get("x-rein-profile")
    if name is None:
        return None
    try:
        resolved = resolve_profile(str(name), workspace=workspace, config=config)
    except ReinError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return "PROFILE001", (f"node {nid}: profile {name!r} cannot serve it: {exc.code}: "
                              f"{exc.message}{hint}")
    req = node.get("requirements") or {}
    entries = [t if isinstance(t, Mapping) else {"name": t} for t in req.get("tools") or []]
    tools = tuple(dict.fromkeys(n for e in entries for n in spellings(str(e.get("name")))))
    effective = effective_profile(resolved, Policy.from_config(config), NodeRequirements(
        tools=tools, permissions=tuple(req.get("permissions") or ()),
        network=req.get("network", "none"), workspace=req.get("workspace", "read_only")))
    servers = {str(s["name"]) for s in resolved.mcp_servers}
    for entry in entries:
        if entry.get("optional"):
            continue
        tool = str(entry.get("name"))
        if tool.startswith(PREFIX):
            server = tool.split("/")[1] if tool.count("/") >= 2 else ""
            if server not in servers:
                why = ("was dropped at resolution (an unset variable)"
                       if server in resolved.dropped_mcp_servers else "is not declared")
                return "PROFILE003", (f"node {nid} needs {tool}, but MCP server {server!r} "
                                      f"{why} in profile {resolved.name!r}")
        if not any(effective.tools.permits(n) for n in spellings(tool)):
            granted = ", ".join(effective.tools.granted) or "(none)"
            return "PROFILE002", (f"node {nid} needs tool {tool!r}, which profile "
                                  f"{resolved.name!r} does not grant (it grants: {granted})")
    for server in req.get("mcp_servers") or []:
        if str(server) not in servers:
            return "PROFILE003", (f"node {nid} needs MCP server {server!r}, which profile "
                                  f"{resolved.name!r} does not declare")
    return None
