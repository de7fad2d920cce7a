"""A thread's sandbox and approval policy, as declared values, and what they let a turn do.

The client declares the sandbox in Codex's spellings: a mode string on ``thread/start``
(``read-only``, ``workspace-write``, ``danger-full-access``) or a policy object tagged by
``type`` on ``turn/start`` (``readOnly``, ``workspaceWrite``, ``dangerFullAccess``,
``externalSandbox``). Either becomes the object form, which the thread records and every
turn's graph carries (so its run is bound to it by digest). The policy only *requests*
permissions for the turn's node: the engine intersects them with the profile and
``rein.toml`` (effective permissions), so no declared value can widen what rein allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.errors import ConfigError

SANDBOX_TYPES = ("readOnly", "workspaceWrite", "dangerFullAccess", "externalSandbox")
_MODES = {"read-only": "readOnly", "workspace-write": "workspaceWrite",
          "danger-full-access": "dangerFullAccess"}
# `untrusted`, `on-failure`, `on-request`: rein's `ask` decisions go to the client.
# `never`: nobody is asked, so a call in `ask` is declined (it never becomes an `allow`).
APPROVAL_POLICIES = ("untrusted", "on-failure", "on-request", "never")
DEFAULT_SANDBOX: Mapping[str, Any] = {"type": "workspaceWrite", "writableRoots": [],
                                      "networkAccess": False, "excludeTmpdirEnvVar": False,
                                      "excludeSlashTmp": False}


def sandbox_policy(value: Any) -> dict[str, Any]:
    """The object form of a declared sandbox (a mode string or a tagged object)."""
    if value is None:
        return dict(DEFAULT_SANDBOX)
    if isinstance(value, str):
        kind = _MODES.get(value, value)
        value = {"type": kind}
    if not isinstance(value, Mapping) or value.get("type") not in SANDBOX_TYPES:
        raise ConfigError(f"unknown sandbox policy {value!r}", code="THREAD002",
                         hint="use one of " + ", ".join(SANDBOX_TYPES) + " (or the modes "
                              + ", ".join(_MODES) + ")")
    kind = value["type"]
    if kind == "readOnly":
        return {"type": kind, "networkAccess": bool(value.get("networkAccess", False))}
    if kind == "workspaceWrite":
        roots = value.get("writableRoots") or []
        return {"type": kind, "writableRoots": [str(r) for r in roots],
                "networkAccess": bool(value.get("networkAccess", False)),
                "excludeTmpdirEnvVar": bool(value.get("excludeTmpdirEnvVar", False)),
                "excludeSlashTmp": bool(value.get("excludeSlashTmp", False))}
    if kind == "externalSandbox":
        net = value.get("networkAccess", "restricted")
        return {"type": kind, "networkAccess": net if net in ("restricted", "enabled")
                else "restricted"}
    return {"type": kind}


def approval_policy(value: Any) -> str:
    """The approval policy's spelling, ``on-request`` when none is given."""
    if value is None:
        return "on-request"
    if value not in APPROVAL_POLICIES:
        raise ConfigError(f"unknown approval policy {value!r}", code="THREAD002",
                         hint="use one of " + ", ".join(APPROVAL_POLICIES))
    return str(value)


def requirements(sandbox: Mapping[str, Any]) -> dict[str, Any]:
    """The node requirements a turn asks for under ``sandbox`` (narrowed by rein later).

    ``writableRoots`` outside the workspace are not granted: a turn writes only in the
    workspace, whatever the client declares."""
    kind = sandbox.get("type")
    network = sandbox.get("networkAccess") in (True, "enabled")
    tools = ["file_read", "file_search", "shell_exec"]
    grants = ["fs:read:**", "shell:exec"]
    workspace = "read_only"
    if kind != "readOnly":
        tools += ["file_write", "edit"]
        grants += ["fs:write:**"]
        workspace = "read_write"
    out: dict[str, Any] = {"tools": tools, "permissions": grants, "workspace": workspace}
    if network or kind == "dangerFullAccess":
        tools.append("http_fetch")
        grants.append("net:fetch")
        out["network"] = "full"  # still under rein.toml's `network` decision (ask by default)
    return out
