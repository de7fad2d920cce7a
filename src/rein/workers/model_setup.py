"""Model workers built from the ``[tiers]`` routes of a merged rein.toml.

:func:`model_workers` builds the model workers alone; a run's whole worker set (commands,
profiles, the driver) is assembled by :mod:`rein.engine.workers_setup`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rein.errors import ConfigError
from rein.workers.base import TIERS

if TYPE_CHECKING:  # the model worker imports this module to re-export model_workers
    from rein.providers.base import Provider
    from rein.workers.model import ModelWorker
    from rein.workers.tool_calls import Approver


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
    from rein.workers.model import ModelWorker

    providers = parse_providers(config.get("providers"))
    registry = registry or default_registry()
    built: dict[str, Provider] = {}
    workers: list[ModelWorker] = []
    tiers = config.get("tiers") or {}
    for tier in TIERS:
        route = tiers.get(tier)
        if not isinstance(route, Mapping) or not route.get("model"):
            continue
        name = str(route.get("provider", ""))
        if name not in providers:
            known = ", ".join(sorted(providers)) or "(none)"
            raise ConfigError(
                f"tiers.{tier}.provider {name!r} has no [providers.{name}] table",
                code="PROVCFG005",
                hint=f"configured providers: {known}",
            )
        if name not in built:
            built[name] = registry.create(providers[name], http_client=http_client)
        stream = bool(providers[name].options.get("stream", False))
        workers.append(
            ModelWorker(
                provider=built[name],
                model=str(route["model"]),
                tiers=(tier,),
                stream=stream,
                approver=approver,
            )
        )
    return tuple(workers)
