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
   rendered inside the untrusted block, never as instructions.

When the loop ends (success or failure), the session's measured facts become a proposed
state delta (``propose_delta``), written to ``.rein/profiles/deltas/`` and named in the
attempt record with the ``rein profile apply`` command that would apply it. The profile file
itself is never written by a session.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.errors import ReinError
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    Budget,
    FailureClass,
    Item,
    ItemKind,
)
from rein.workers.grants import spellings
from rein.workers.model import SYSTEM_PROMPT, ModelWorker, render_brief

DELTAS_DIR = Path(".rein") / "profiles" / "deltas"
_OUTCOMES = {None: "completed", FailureClass.TIMEOUT: "timeout"}


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ProfileWorker:
    """A model worker that serves nodes naming an OAP profile as that profile."""

    name = "model"

    def __init__(self, inner: ModelWorker, *, workspace: Path, config: Config,
                 now: Callable[[], datetime] = _utc_now) -> None:
        self.inner = inner
        self.workspace = Path(workspace)
        self.config = config
        self.now = now

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def tiers(self) -> frozenset[str]:
        return self.inner.tiers

    def can_serve(self, request: AttemptRequest) -> bool:
        return self.inner.can_serve(request)

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

        started = self.now()
        try:
            resolved = resolve_profile(str(request.profile), workspace=self.workspace,
                                       config=self.config)
        except ReinError as exc:
            yield AttemptResult(failure=FailureClass.MODEL_ERROR, message=(
                f"profile {request.profile!r} cannot serve node {request.node_id}: "
                f"{exc.code}: {exc.message}"))
            return
        effective = effective_profile(resolved, Policy.from_config(self.config),
                                      node_requirements(request))
        request = dataclasses.replace(request, budget=narrow_budget(request.budget,
                                                                    effective.budgets))
        worker, model_note = self._worker_for(effective, request)
        yield Item(kind=ItemKind.NOTICE, data={
            "text": f"served as profile {resolved.name} (revision {resolved.revision})",
            "profile": effective.to_json(), "model": model_note})
        system = assemble_prompt(effective, task_brief=render_brief(request)) + "\n" + \
            SYSTEM_PROMPT
        user = "Do the task described under “Task”, then call `submit_outputs`."
        result: AttemptResult | None = None
        async for out in worker.loop(request, ceilings=[(f"profile {resolved.name}",
                                                         effective.as_policy())],
                                     system=system, user=user):
            if isinstance(out, AttemptResult):
                result = out
                break
            yield out
        if result is None:
            return
        record: dict[str, Any] = {"name": resolved.name, "revision": resolved.revision,
                                  "digest": resolved.digest}
        try:
            path, delta = self._write_delta(resolved, request, result, started)
        except (ReinError, OSError) as exc:
            record["delta_error"] = f"{getattr(exc, 'code', 'OSError')}: {exc}"
        else:
            record["delta"] = str(path.relative_to(self.workspace))
            record["apply"] = f"rein profile apply {resolved.source} {record['delta']}"
            yield Item(kind=ItemKind.NOTICE, data={
                "text": f"proposed a state delta for profile {resolved.name}: "
                        f"{record['apply']}",
                "delta": record["delta"], "operations": len(delta.get("operations") or [])})
        yield dataclasses.replace(result, extra={**result.extra, "x-rein-profile": record})

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
                     started: datetime) -> tuple[Path, dict[str, Any]]:
        from rein.profiles.generate import SessionInfo, propose_delta

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
        secrets = {n: request.env[n] for n in request.secret_names if request.env.get(n)}
        delta = propose_delta(resolved, session=info, summary=summary, secrets=secrets,
                              now=ended)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node_id)
        path = self.workspace / DELTAS_DIR / request.run_id / f"{safe}-{request.attempt}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(delta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path, delta


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
