"""Intelligence tiers (AGS §11): what a node asks for, cheapest first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Tier = Literal["minimal", "standard", "advanced", "frontier"]
TIERS: tuple[Tier, ...] = ("minimal", "standard", "advanced", "frontier")


def no_route(name: str, table: Any) -> str | None:
    """Why the ``[tiers]`` entry ``name = table`` makes no route (``None``: it makes one):
    ``not a tier``, ``not a table`` or ``no model``. The one rule: the routes are read by
    ``rein.workers.model_setup.tier_routes``, the entries without one named by
    ``rein config show`` and the RT011 refusal."""
    if name not in TIERS:
        return "not a tier"
    if not isinstance(table, Mapping):
        return "not a table"
    return None if table.get("model") else "no model"
