"""The specification flow's settings: ``[spec]`` of ``rein.toml``, and what it shares with
``[dev]`` (who approves: ``[dev] plan_roles``; the caps ``max_features`` and
``max_brief_bytes``), so that a bundle is approved by the people who approve a dev plan and
publishes a plan `rein dev` accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.dev.settings import load_settings as load_dev
from rein.errors import ConfigError

GATES = ("document", "bundle")
KEYS = ("gates", "document_attempts")


def load(spec: Mapping[str, Any] | None, dev: Mapping[str, Any] | None) -> dict[str, Any]:
    """The flow's settings as plain data (they are written into the graph's params)."""
    table = dict(spec or {})
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise _bad(unknown[0], f"an unknown key; the keys are {', '.join(KEYS)}")
    gates = table.get("gates", "document")
    if gates not in GATES:
        raise _bad("gates", "\"document\" (a person approves each document) or \"bundle\" "
                   "(one approval of the whole bundle)")
    attempts = table.get("document_attempts", 3)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise _bad("document_attempts", "a whole number of at least 1")
    settings = load_dev(dev)
    return {"gates": gates, "document_attempts": attempts,
            "roles": list(settings.plan_roles), "max_features": settings.max_features,
            "max_brief_bytes": settings.max_brief_bytes}


def _bad(key: str, what: str) -> ConfigError:
    return ConfigError(f"[spec] {key} in rein.toml must be {what}", code="SPEC001",
                       hint=f"fix [spec] {key}, or remove it for the default")
