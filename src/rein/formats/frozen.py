"""The hand-written value classes of :mod:`rein.core.frozen`, where the document layer has
always imported them from."""

from __future__ import annotations

from rein.core.frozen import Frozen, set_field

__all__ = ["Frozen", "set_field"]
