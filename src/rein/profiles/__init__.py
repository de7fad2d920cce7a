"""Who the worker is: OAP profile discovery, resolution, narrowing, prompts and writeback.

The engine and the workers use four calls::

    resolved = resolve_profile("code-reviewer", workspace=ws, config=load_config(ws))
    effective = effective_profile(resolved, Policy.from_config(config), node_requirements)
    prompt = assemble_prompt(effective, task_brief=brief)
    result = apply_delta(document, delta, approve=True, actor="ann", now=now)  # pure

``rein profile apply`` goes through :func:`rein.profiles.apply.apply_file`, which adds the
lock, re-validation, the atomic write and the proposals queue around :func:`apply_delta`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Names load with their module on first use: the engine reaches ``rein.profiles.policy``
# on every run, and must not pay for profile resolution, writeback and the OAP validator.
if TYPE_CHECKING:
    from rein.profiles.apply import ApplyOutcome, accept, apply_file, decline
    from rein.profiles.effective import EffectiveProfile, ToolGrant, delegate, effective_profile
    from rein.profiles.policy import NodeRequirements, Policy
    from rein.profiles.prompt import assemble_prompt
    from rein.profiles.records import Adjustment, ProfileError
    from rein.profiles.resolve import ResolvedProfile, resolve_profile
    from rein.profiles.writeback import ApplyResult, apply_delta

_LAZY = {
    "Adjustment": "rein.profiles.records",
    "ApplyOutcome": "rein.profiles.apply",
    "ApplyResult": "rein.profiles.writeback",
    "EffectiveProfile": "rein.profiles.effective",
    "NodeRequirements": "rein.profiles.policy",
    "Policy": "rein.profiles.policy",
    "ProfileError": "rein.profiles.records",
    "ResolvedProfile": "rein.profiles.resolve",
    "ToolGrant": "rein.profiles.effective",
    "accept": "rein.profiles.apply",
    "apply_delta": "rein.profiles.writeback",
    "apply_file": "rein.profiles.apply",
    "assemble_prompt": "rein.profiles.prompt",
    "decline": "rein.profiles.apply",
    "delegate": "rein.profiles.effective",
    "effective_profile": "rein.profiles.effective",
    "resolve_profile": "rein.profiles.resolve",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rein.profiles' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "Adjustment",
    "ApplyOutcome",
    "ApplyResult",
    "EffectiveProfile",
    "NodeRequirements",
    "Policy",
    "ProfileError",
    "ResolvedProfile",
    "ToolGrant",
    "accept",
    "apply_delta",
    "apply_file",
    "assemble_prompt",
    "decline",
    "delegate",
    "effective_profile",
    "resolve_profile",
]
