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
6. **session tools** (:mod:`rein.workers.session_tools`): the profile's MCP servers
   (:mod:`rein.workers.profile_mcp`), each launched only after a person accepted an
   ``mcp_launch`` approval naming its command line (or ``[mcp] trusted`` in a managed or user
   ``rein.toml`` lists that command line), and stopped when the attempt ends, pauses or is
   cancelled; memory tools when a store is granted; ``note_learning`` for learned state with
   evidence.

A bad profile (missing, invalid, or refusing a tool the node needs) is found before
anything is spent (:mod:`rein.workers.profile_fit`): :meth:`ProfileWorker.refuse_node` is
asked by the engine's pre-flight and the node is ``blocked`` with code
``PROFILE001``–``PROFILE003``.

When the loop ends (success or failure), the session's measured facts and what it noted
with verified evidence become a proposed state delta (:mod:`rein.workers.profile_delta`),
written to ``.rein/profiles/deltas/`` and named in the attempt record with the
``rein profile apply`` command that would apply it. The profile file itself is never written
by a session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.core.failures import FailureClass
from rein.errors import ReinError
from rein.profiles.effective import EffectiveProfile, effective_profile
from rein.profiles.memory import open_stores
from rein.profiles.policy import Policy
from rein.profiles.prompt import assemble_prompt
from rein.profiles.resolve import ResolvedProfile, resolve_profile
from rein.tools.hooks import Hook
from rein.tools.mcp import PREFIX
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind
from rein.workers.brief import SYSTEM_PROMPT, render_brief
from rein.workers.hook_calls import profile_hooks
from rein.workers.model import ModelWorker
from rein.workers.profile_delta import write_delta
from rein.workers.profile_fit import (
    narrow_budget,
    node_requirements,
    profile_mcp_servers,
    profile_refusal,
)
from rein.workers.profile_mcp import HubHost, launch_answers, session_hub
from rein.workers.session_tools import SessionTools


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
        return self.inner.can_serve(request.replace(tools=built_in))

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
        request = request.replace(budget=narrow_budget(request.budget, effective.budgets))
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
        hub = session_hub(resolved, effective, workspace=self.workspace, environ=self.environ)
        answers: dict[str, str] = {}
        if hub is not None:
            notes, answers = await launch_answers(request, hub, self.config)
            for note in notes:
                yield Item(kind=ItemKind.NOTICE, data=note)
        extra = SessionTools(stores=stores, material=brief, now=self.now,
                             source=f"session {request.run_id}/{request.node_id}"
                                    f"#{request.attempt}")
        result: AttemptResult | None = None
        async with HubHost(hub, answers) as running:
            if running is not None:
                extra.hub = running
                yield Item(kind=ItemKind.NOTICE, data={
                    "text": "MCP servers for this session", "mcp": running.to_json()})
            async for out in worker.loop(request, ceilings=[(f"profile {resolved.name}",
                                                             effective.as_policy())],
                                         system=system, user=user, extra=extra,
                                         hooks=self._hooks(resolved)):
                if isinstance(out, AttemptResult):
                    result = out
                    break
                yield out
        if result is None:
            return
        for out in self._proposed(resolved, request, result, started, extra):
            yield out

    def _hooks(self, resolved: ResolvedProfile) -> tuple[Hook, ...]:
        """The hooks the profile binds by name (``lifecycle``), as rein.toml defines them."""
        if not resolved.hooks:
            return ()
        return profile_hooks(resolved.hooks, self.config.hooks, resolved.name)

    def _proposed(self, resolved: ResolvedProfile, request: AttemptRequest,
                  result: AttemptResult, started: datetime, extra: SessionTools
                  ) -> list[Item | AttemptResult]:
        """The session's proposed delta (a notice naming it) and the result recording it."""
        record: dict[str, Any] = {"name": resolved.name, "revision": resolved.revision,
                                  "digest": resolved.digest}
        out: list[Item | AttemptResult] = []
        learning = extra.learning()
        try:
            path, delta, skipped = write_delta(
                resolved, request, result, workspace=self.workspace, started=started,
                ended=self.now(), learning=learning)
        except (ReinError, OSError) as exc:
            record["delta_error"] = f"{getattr(exc, 'code', 'OSError')}: {exc}"
        else:
            record["delta"] = str(path.relative_to(self.workspace))
            record["apply"] = f"rein profile apply {resolved.source} {record['delta']}"
            if skipped:
                record["skipped"] = list(skipped)
            out.append(Item(kind=ItemKind.NOTICE, data={
                "text": f"proposed a state delta for profile {resolved.name}: "
                        f"{record['apply']}",
                "delta": record["delta"], "operations": len(delta.get("operations") or []),
                "proposals": len(delta.get("proposals") or []), "skipped": list(skipped)}))
        out.append(result.replace(extra={**result.extra, "x-rein-profile": record}))
        return out

    def _worker_for(self, effective: EffectiveProfile, request: AttemptRequest
                    ) -> tuple[ModelWorker, dict[str, Any]]:
        """The model worker for the session, and how the model was chosen (recorded)."""
        inner = self.inner
        choice = effective.model
        note = {"requested": choice.to_json(), "served": f"{inner.provider.name}/{inner.model}"}
        if request.routed is None and choice.id and choice.provider == inner.provider.name \
                and choice.id != inner.model:
            note["served"] = f"{inner.provider.name}/{choice.id}"
            note["rule"] = "the profile's model, on this worker's provider"
            return inner.with_model(choice.id), note
        note["rule"] = ("the tier routing decides" if request.routed is not None
                        else "this worker's model (the profile names another provider)")
        return inner, note
