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

from rein.profiles.apply import ApplyOutcome, accept, apply_file, decline
from rein.profiles.effective import EffectiveProfile, ToolGrant, delegate, effective_profile
from rein.profiles.policy import NodeRequirements, Policy
from rein.profiles.prompt import assemble_prompt
from rein.profiles.records import Adjustment, ProfileError
from rein.profiles.resolve import ResolvedProfile, resolve_profile
from rein.profiles.writeback import ApplyResult, apply_delta

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
