"""Model workers built from the ``[tiers]`` routes of a merged rein.toml.

:func:`model_workers` builds the model workers alone; a run's whole worker set (commands,
profiles, the driver) is assembled by :mod:`rein.engine.run.workers_setup`, which reads the
routes with :func:`tier_routes` and builds each model worker with
:func:`model_worker_builder` the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen
from rein.core.tiers import TIERS, Tier, no_route
from rein.errors import ConfigError

if TYPE_CHECKING:  # imported when workers are built: the model worker pulls in providers
    from rein.profiles.policy import Policy
    from rein.providers.base import Provider
    from rein.providers.config import ProviderConfig
    from rein.tools.hooks import Hook
    from rein.workers.model import ModelWorker
    from rein.workers.tool_calls import Approver


class TierRoute(Frozen):
    """One ``[tiers.<tier>]`` table: which provider (or command worker) and model serve it."""

    tier: Tier
    provider: str
    model: str
    context_tokens: int | None = None  # checked against a node's min_context_tokens


def tier_routes(tiers: Mapping[str, Any] | None, *, default_provider: str = ""
                ) -> tuple[TierRoute, ...]:
    """The routes of a ``[tiers]`` table that name a model, in tier order (a table without
    a model, or for an unknown tier, is not a route)."""
    routes = []
    for tier in TIERS:
        table = (tiers or {}).get(tier)
        if isinstance(table, Mapping) and no_route(tier, table) is None:
            routes.append(TierRoute(
                tier=tier, provider=str(table.get("provider", default_provider)),
                model=str(table["model"]), context_tokens=table.get("context_tokens")))
    return tuple(routes)


def model_worker_builder(providers: Mapping[str, ProviderConfig],
                         create: Callable[[ProviderConfig], Provider], *,
                         approver: Approver | None = None, policy: Policy | None = None,
                         hooks: Sequence[Hook] = (), protected: Sequence[str] = ()
                         ) -> Callable[[TierRoute], ModelWorker]:
    """A function building the model worker of a route whose provider is in ``providers``;
    each provider is created once (``create``) and shared by the tiers routed to it.
    ``hooks`` are the lifecycle hooks every session of these workers runs; ``protected``
    the paths none of their nodes may write (``rein.tools.sandbox.protected_paths``)."""
    from rein.workers.model import ModelWorker

    built: dict[str, Provider] = {}

    def build(route: TierRoute) -> ModelWorker:
        cfg = providers[route.provider]
        if route.provider not in built:
            built[route.provider] = create(cfg)
        return ModelWorker(provider=built[route.provider], model=route.model,
                           tiers=(route.tier,), stream=bool(cfg.options.get("stream", False)),
                           approver=approver, policy=policy, hooks=hooks,
                           context_tokens=route.context_tokens, protected=protected)

    return build


def model_workers(
    config: Mapping[str, Any],
    *,
    registry: Any = None,
    http_client: Any = None,
    approver: Approver | None = None,
) -> tuple[ModelWorker, ...]:
    """One model worker per ``[tiers.<tier>]`` route of a merged rein.toml, in tier order.

    Each route names a ``provider`` (a ``[providers.NAME]`` table) and a ``model``; the worker
    serves only that tier. No ``[tiers]`` table means no model workers (the driver is the
    default). An unknown provider name is ConfigError PROVCFG005.
    """
    from rein.providers.base import default_registry
    from rein.providers.config import parse_providers

    providers = parse_providers(config.get("providers"))
    registry = registry or default_registry()
    build = model_worker_builder(
        providers, lambda cfg: registry.create(cfg, http_client=http_client), approver=approver)
    workers = []
    for route in tier_routes(config.get("tiers")):
        if route.provider not in providers:
            known = ", ".join(sorted(providers)) or "(none)"
            raise ConfigError(
                f"tiers.{route.tier}.provider {route.provider!r} has no "
                f"[providers.{route.provider}] table",
                code="PROVCFG005",
                hint=f"configured providers: {known}",
            )
        workers.append(build(route))
    return tuple(workers)
