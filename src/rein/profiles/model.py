"""Model resolution (OAP §3.3, L1-I12): which model serves a profile, and by which rule.

Rules in order: ``exact`` (provider + id), ``fallback`` (each ``fallbacks[]`` entry),
``tier`` (rein's tier routing picks the model), ``default`` (rein's default). A model is
usable when rein's policy allows ``provider/id`` and ``can_serve`` says rein can reach it.
Parameters are advisory: kept here, dropped by the provider layer with a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rein.core.frozen import Frozen, field
from rein.formats.globs import match_any
from rein.profiles.policy import Policy


class ModelChoice(Frozen):
    """The model a session uses, or the tier to route, and the rule that chose it."""

    rule: str  # exact | fallback | tier | default
    provider: str | None = None
    id: str | None = None
    tier: str | None = None
    reason: str = ""
    requested: Mapping[str, Any] = field(default_factory=dict)
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "provider": self.provider, "id": self.id, "tier": self.tier,
                "reason": self.reason, "parameters": dict(self.parameters)}


def resolve_model(model: Mapping[str, Any], policy: Policy,
                  can_serve: Callable[[str, str], bool] | None = None) -> ModelChoice:
    """Apply the four rules of §3.3 in order."""
    def usable(provider: str, model_id: str) -> bool:
        allowed = match_any(policy.models, f"{provider}/{model_id}")
        return allowed and (can_serve is None or can_serve(provider, model_id))

    requested = {k: v for k, v in model.items() if k in ("provider", "id", "tier", "fallbacks")}
    params = dict(model.get("parameters") or {})
    tried: list[str] = []
    if model.get("provider") and model.get("id"):
        if usable(model["provider"], model["id"]):
            return ModelChoice(rule="exact", provider=model["provider"], id=model["id"],
                               tier=model.get("tier"), reason="the profile's model",
                               requested=requested, parameters=params)
        tried.append(f"{model['provider']}/{model['id']}")
    for fallback in model.get("fallbacks") or []:
        if usable(fallback["provider"], fallback["id"]):
            return ModelChoice(
                rule="fallback", provider=fallback["provider"], id=fallback["id"],
                tier=model.get("tier"), requested=requested, parameters=params,
                reason=f"{', '.join(tried)} not available; using fallback "
                       f"{fallback['provider']}/{fallback['id']}")
        tried.append(f"{fallback['provider']}/{fallback['id']}")
    unavailable = f"{', '.join(tried)} not available; " if tried else ""
    if model.get("tier"):
        return ModelChoice(rule="tier", tier=model["tier"], requested=requested,
                           parameters=params,
                           reason=f"{unavailable}routing tier {model['tier']!r}")
    return ModelChoice(rule="default", requested=requested, parameters=params,
                       reason=f"{unavailable}rein's default model")
