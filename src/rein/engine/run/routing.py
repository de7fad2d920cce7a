"""Tier routing (AGS §11.4) through ``rein.toml``.

``[tiers.<tier>]`` tables map an AGS tier to a provider and model::

    [tiers.standard]
    provider = "openai"
    model = "gpt-4.1-mini"
    context_tokens = 128000      # optional; checked against min_context_tokens

    [routing]
    allow_route_up = true        # default: a missing tier may be served by a higher one

Rules: never below the requested tier unless the node says ``allow_downgrade`` (and then the
downgrade is recorded with its reason); routing up is allowed; ``min_context_tokens`` is a
hard floor. With no ``[tiers]`` table at all, the worker that takes the attempt serves the
tier as requested (the scripted and driver workers serve every tier) and says so in
``routed``; a ``[tiers]`` table none of whose entries makes a route is not that (it is
refused as any tier nobody serves). A tier that cannot be served is RT011, raised before
anything is spent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.core.tiers import TIERS, Tier, no_route
from rein.errors import RoutingError
from rein.workers.base import AttemptRequest, Routed, Worker, worker_id
from rein.workers.model_setup import TierRoute, tier_routes


class Router(Frozen):
    """The routing profile: which model serves which tier."""

    routes: Mapping[Tier, TierRoute]
    allow_route_up: bool = True
    # The [tiers] entries no route was made of, each with why: what a refusal points at.
    unused: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, tiers: Mapping[str, Any] | None, routing: Mapping[str, Any] | None
                    ) -> Router:
        """The routes of ``[tiers]`` and the ``[routing]`` switches."""
        routes = {r.tier: r for r in tier_routes(tiers, default_provider="default")}
        up = bool((routing or {}).get("allow_route_up", True))
        return cls(routes=routes, allow_route_up=up, unused=_unused(tiers or {}))

    @property
    def configured(self) -> bool:
        """Whether ``[tiers]`` has entries a node's tier is checked against: routes, or
        entries that make none (every tier is then refused, before anything is spent)."""
        return bool(self.routes or self.unused)

    def route(self, tier: str, intelligence: Mapping[str, Any] | None, *, node: str
              ) -> Routed | None:
        """How ``tier`` is served, ``None`` when the worker serves tiers itself, or RT011.
        A ``[tiers]`` table whose every entry makes no route is refused as one that does
        not serve the tier: a misspelt name or model, not a project without tiers."""
        if not self.routes and not self.unused:
            return None
        intel = intelligence or {}
        floor = intel.get("min_context_tokens")

        def fits(route: TierRoute) -> bool:
            return floor is None or route.context_tokens is None or route.context_tokens >= floor

        want = TIERS.index(tier)
        candidates = [t for t in TIERS[want:] if t in self.routes and fits(self.routes[t])]
        if candidates and (candidates[0] == tier or self.allow_route_up):
            r = self.routes[candidates[0]]
            return Routed(requested_tier=tier, effective_tier=r.tier,  # type: ignore[arg-type]
                          provider=r.provider, model=r.model)
        if intel.get("allow_downgrade"):
            lower = [t for t in reversed(TIERS[:want]) if t in self.routes
                     and fits(self.routes[t])]
            if lower:
                r = self.routes[lower[0]]
                return Routed(requested_tier=tier, effective_tier=r.tier,  # type: ignore[arg-type]
                              provider=r.provider, model=r.model, downgraded=True,
                              reason=f"no model configured for tier {tier!r}; "
                                     f"allow_downgrade routed it to {r.tier!r}")
        if not self.routes:
            raise RoutingError(
                f"node {node!r} needs tier {tier!r}, and no entry of [tiers] makes a route: "
                f"{', '.join(self.unused)}",
                hint="correct those entries in rein.toml (`rein config show` notes each), "
                     "or remove [tiers] to let the worker serve every tier",
                node=node, tier=tier)
        served = ", ".join(sorted(self.routes, key=TIERS.index))
        why = f" with at least {floor} context tokens" if floor else ""
        unused = (f"; no route was made of {', '.join(self.unused)}: see `rein config show`"
                  if self.unused else "")
        raise RoutingError(
            f"node {node!r} needs tier {tier!r}{why}; the routing profile serves: {served}",
            hint=f"add a [tiers.{tier}] table with a model to rein.toml, or set "
                 f"intelligence.allow_downgrade: true on the node{unused}",
            node=node,
            tier=tier,
        )


def _unused(tiers: Mapping[str, Any]) -> tuple[str, ...]:
    """The entries of ``[tiers]`` no route was made of, each with why."""
    return tuple(f"[tiers.{name}] ({why})" for name, table in tiers.items()
                 if not str(name).startswith("x-") and (why := no_route(name, table)))


def select_worker(workers: Iterable[Worker], request: AttemptRequest) -> Worker | None:
    """The first worker, in configuration order, that can serve ``request``.

    A node that names its worker (``x-rein-worker: command/claude``, or just ``command`` /
    ``model`` for any worker of that kind) is served only by that worker: an explicit choice
    never falls through to another kind.
    """
    chosen = request.worker
    for worker in workers:
        if chosen is not None and chosen not in (worker_id(worker), worker.name):
            continue
        if worker.can_serve(request):
            return worker
    return None
