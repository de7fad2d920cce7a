"""A session's config options: its mode and its model, as ACP ``configOptions``.

Both are selects. ``mode`` is the session mode again (the thread's sandbox policy, a request
the engine narrows by rein.toml and the profile). ``model`` is one of the models rein.toml
routes a tier to (``[tiers.<tier>]``), chosen by its tier, since rein chooses a model by
tier: a client can pick among what rein.toml configures and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp import schema

from rein.workers.model_setup import tier_routes

# The session modes: the sandbox policy values a thread runs under.
MODES = (("read-only", "Read only", "reads files and runs commands that only read"),
         ("workspace-write", "Workspace write", "also writes files inside the workspace"),
         ("danger-full-access", "Full access",
          "also fetches from the network, as far as rein.toml allows"))
MODE_OF = {"readOnly": "read-only", "workspaceWrite": "workspace-write",
           "dangerFullAccess": "danger-full-access", "externalSandbox": "danger-full-access"}
DEFAULT_TIER = "standard"  # the tier a conversation turn asks for unless told otherwise


def mode_of(thread: Mapping[str, Any]) -> str:
    return MODE_OF.get(str((thread.get("sandbox") or {}).get("type")), "workspace-write")


def models(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(tier, model)`` of each route rein.toml configures, in tier order."""
    return [(route.tier, route.model) for route in tier_routes(config.get("tiers"))]


def modes(thread: Mapping[str, Any]) -> schema.SessionModeState:
    return schema.SessionModeState(
        current_mode_id=mode_of(thread),
        available_modes=[schema.SessionMode(id=i, name=n, description=d)
                         for i, n, d in MODES])


def config_options(thread: Mapping[str, Any], config: Mapping[str, Any]) -> list[Any]:
    """The session's options with their current values."""
    out: list[Any] = [schema.SessionConfigOptionSelect(
        id="mode", name="Mode", category="mode", type="select",
        description="what the session may do: the sandbox policy it asks for",
        current_value=mode_of(thread),
        options=[schema.SessionConfigSelectOption(value=i, name=n, description=d)
                 for i, n, d in MODES])]
    routes = models(config)
    if routes:
        tier = str(thread.get("tier") or DEFAULT_TIER)
        current = tier if tier in {t for t, _ in routes} else routes[0][0]
        out.append(schema.SessionConfigOptionSelect(
            id="model", name="Model", category="model", type="select",
            description="the model the turns use, by the rein.toml tier routed to it",
            current_value=current,
            options=[schema.SessionConfigSelectOption(value=t, name=f"{m} ({t})")
                     for t, m in routes]))
    return out


def window(thread: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """The context window (``context_tokens``) rein.toml declares for the thread's tier."""
    tier = str(thread.get("tier") or DEFAULT_TIER)
    route = next((r for r in tier_routes(config.get("tiers")) if r.tier == tier), None)
    tokens = route.context_tokens if route is not None else None
    return int(tokens) if isinstance(tokens, int) and tokens > 0 else None


def allowed_values(option: str, config: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The values ``option`` takes (None: no such option)."""
    if option == "mode":
        return tuple(m[0] for m in MODES)
    if option == "model":
        return tuple(t for t, _ in models(config)) or None
    return None
