"""What a ``rein.toml`` file may hold in the sections rein checks when it reads it, with
nothing imported: the rules :mod:`rein.config` refuses a file by (CFG003, CFG004), and
that a cold ``rein next`` (:mod:`rein.workers.driver.glance`) checks a file against
before it answers without :mod:`rein.config`. One set of rules, so that the two never
disagree on which file is refused.

Each ``*_problem`` function returns what is wrong (the message rein.config reports), or
``None``; :data:`UNKNOWN_KEY` is the message of a key the section does not have, to which
rein.config adds the nearest known key as a hint.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Mapping

# A rein.toml is a few kilobytes; the bound keeps a FIFO, a device or a huge file from
# hanging or flooding every command run in a cloned repository.
MAX_CONFIG_BYTES = 1024 * 1024

DECISIONS = ("deny", "ask", "allow")  # ordered from narrowest to widest
# [policy] keys and how a lower file combines with a higher one.
POLICY_RULES: dict[str, str] = {
    "default": "decision", "shell": "decision", "edit": "decision", "network": "decision",
    "tools": "intersect", "deny_tools": "union",
    "read_roots": "roots", "write_roots": "roots", "deny_paths": "union",
    "allow_hosts": "intersect", "models": "intersect",
    "memory_mode": "memory", "memory_scopes": "intersect",
    "writeback": "writeback",
    "max_turns": "min", "max_tool_calls": "min", "timeout_seconds": "min",
    "max_cost_usd": "min", "max_context_tokens": "min", "max_state_tokens": "min",
    "max_state_bytes": "min", "subagent_max_depth": "min", "subagent_max_concurrent": "min",
    "absolute_paths": "and", "project_hooks": "and", "allow_shadowing": "and",
    "project_trust": "and",
}
ORDERS = {
    "decision": DECISIONS,
    "memory": ("off", "read_only", "read_write"),
    "writeback": ("off", "propose", "auto"),
}
LIMIT_KEYS = ("max_bytes", "max_depth", "max_alias_nodes")
# [approver]: who answers approvals (rein.config.approver says what each key means).
APPROVER_KEYS = ("id", "roles", "answer_when_confined", "allowed_signers", "signing_key")
APPROVER_PATH_KEYS = ("allowed_signers", "signing_key")
# The largest integer JSON carries exactly: the configuration is digested and shown as JSON.
SAFE_INT = 2**53 - 1

UNKNOWN_KEY = "unknown key"


def policy_problem(key: str, value: object) -> str | None:
    """What is wrong with ``[policy] key = value``."""
    rule = POLICY_RULES.get(key)
    if rule is None:
        return UNKNOWN_KEY
    if rule in ORDERS and value not in ORDERS[rule]:
        return f"{value!r} is not one of {ORDERS[rule]}"
    if rule in ("intersect", "union", "roots") and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return "must be a list of strings"
    if rule == "min" and (isinstance(value, bool) or not isinstance(value, (int, float))
                          or value < 0):
        return "must be a non-negative number"
    if rule == "and" and not isinstance(value, bool):
        return "must be true or false"
    return None


def limits_problem(key: str, value: object) -> str | None:
    """What is wrong with ``[limits] key = value``."""
    if key not in LIMIT_KEYS:
        return UNKNOWN_KEY
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return "must be a positive integer"
    return None


def approver_problem(key: str, value: object) -> tuple[str, str | None] | None:
    """What is wrong with ``[approver] key = value``, and the hint that shows it right."""
    if key == "id" and not (isinstance(value, str) and value.strip()):
        return "must be a non-empty string", 'for example: id = "ana@example.org"'
    if key == "roles" and not role_list(value):
        return "must be a list of role names", 'for example: roles = ["release-manager"]'
    if key == "answer_when_confined" and not isinstance(value, bool):
        return "must be true or false", None
    if key in APPROVER_PATH_KEYS and not (isinstance(value, str) and value.strip()):
        return "must be a file path", None
    if key not in APPROVER_KEYS:
        return UNKNOWN_KEY, None
    return None


def role_list(value: object) -> bool:
    """Whether ``value`` is a list of role names (``roles``, ``[dev] plan_roles``)."""
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def mcp_trusted_problem(value: object) -> str | None:
    """What is wrong with ``[mcp] trusted = value``: it grants launches without asking."""
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return "must be a list of command lines (strings)"
    return None


def bad_number(data: Mapping[str, object]) -> tuple[str, object] | None:
    """The first number of a file's ``data`` (as :mod:`tomllib` reads it) that JSON cannot
    carry exactly, with the key that holds it: TOML's ``inf`` and ``nan``, and integers
    beyond 2^53. ``None`` when there is none."""
    stack: list[tuple[str, object]] = list(data.items())
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.items())
        elif isinstance(value, list):
            stack.extend((key, item) for item in value)
        elif _unsafe(value):
            return key, value
    return None


def _unsafe(value: object) -> bool:
    """A float that is not finite, or an integer beyond 2^53."""
    if isinstance(value, float):
        return not math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > SAFE_INT


__all__ = ["APPROVER_KEYS", "APPROVER_PATH_KEYS", "DECISIONS", "LIMIT_KEYS",
           "MAX_CONFIG_BYTES", "ORDERS", "POLICY_RULES", "SAFE_INT", "UNKNOWN_KEY",
           "approver_problem", "bad_number", "limits_problem", "mcp_trusted_problem",
           "policy_problem", "role_list"]
