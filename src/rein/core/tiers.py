"""Intelligence tiers (AGS §11): what a node asks for, cheapest first."""

from __future__ import annotations

from typing import Literal

Tier = Literal["minimal", "standard", "advanced", "frontier"]
TIERS: tuple[Tier, ...] = ("minimal", "standard", "advanced", "frontier")
