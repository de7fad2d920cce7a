"""``[approver]``: who answers approvals on this machine, and the gate roles they hold.

Read from the managed and user ``rein.toml`` only: who reads a repository is not the
repository's to say, so a project file's ``[approver]`` is dropped with a note. The most
trusted file that sets ``id`` wins (a user file cannot rename a managed identity); ``roles``
narrow like an allow-set, so a managed ``roles = [...]`` is the most a user file can hold.
Without an ``id`` the approver is the OS account, holding no roles: roles need a named person.

The identity is only as strong as the file that names it: anything that can write the user
file (an agent running as the same OS user, say) can claim its roles. A managed file, which
that user cannot write, is what makes the roles binding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, set_field

OS_ACCOUNT = "the OS account"


class Approver(Frozen):
    """Who answers approvals here, and the gate ``roles`` they hold."""

    __slots__ = ("id", "roles", "source")
    id: str
    roles: tuple[str, ...]
    source: str  # the rein.toml that named them, or "the OS account" when none did

    def __init__(self, *, id: str, roles: tuple[str, ...] = (),
                 source: str = "") -> None:
        set_field(self, "id", id)
        set_field(self, "roles", roles)
        set_field(self, "source", source)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "roles": list(self.roles), "source": self.source}


def approver_of(section: Mapping[str, Any], sources: Mapping[str, tuple[str, ...]]
                ) -> Approver:
    """The approver a merged ``[approver]`` names; else the OS account, holding no roles."""
    if section.get("id"):
        source = (sources.get("approver.id") or ("",))[0]
        return Approver(id=str(section["id"]), roles=tuple(section.get("roles") or ()),
                        source=source)
    return Approver(id=os_account(), roles=(), source=OS_ACCOUNT)


def os_account() -> str:
    """The login name of the process's user id, not of ``$USER`` (which anyone can set)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):  # no passwd entry (a bare container), or Windows
        import getpass  # only without a passwd entry

        try:
            return getpass.getuser()
        except (OSError, KeyError):
            return "unknown"


def check_approver(data: Mapping[str, Any], path: Path,
                   bad: Callable[..., Exception]) -> None:
    """Type-check one file's ``[approver]`` (CFG004 through ``bad``)."""
    approver = data.get("approver", {})
    if not isinstance(approver, dict):
        raise bad(path, "approver", "approver", "must be a table")
    for key, value in approver.items():
        if key == "id" and not (isinstance(value, str) and value.strip()):
            raise bad(path, "approver", key, "must be a non-empty string",
                      'for example: id = "ana@example.org"')
        elif key == "roles" and not (isinstance(value, list)
                                     and all(isinstance(v, str) and v for v in value)):
            raise bad(path, "approver", key, "must be a list of role names",
                      'for example: roles = ["release-manager"]')
        elif key not in ("id", "roles"):
            from rein.core.suggest import with_suggestion

            raise bad(path, "approver", key, "unknown key",
                      with_suggestion("known keys: id, roles", key, ("id", "roles")))


def without_approver(data: dict[str, Any], notes: list[str], path: Path) -> dict[str, Any]:
    """Who answers approvals is the reader's to say, never the repository's."""
    if "approver" not in data:
        return data
    notes.append(f"{path}: [approver] ignored (only a managed or user rein.toml names who "
                 "answers approvals)")
    return {k: v for k, v in data.items() if k != "approver"}


def merge_approver(target: dict[str, Any], sources: dict[str, tuple[str, ...]],
                   notes: list[str], value: dict[str, Any], path: str) -> None:
    """``id``: the most trusted file wins; ``roles``: a lower file only narrows."""
    if "id" in value:
        if "id" not in target:
            target["id"], sources["approver.id"] = value["id"], (path,)
        elif value["id"] != target["id"]:
            notes.append(f"{path}: approver.id = {value['id']!r} cannot change "
                         f"{target['id']!r}; kept {target['id']!r}")
    if "roles" in value:
        if "roles" not in target:
            target["roles"], sources["approver.roles"] = list(value["roles"]), (path,)
            return
        kept = [r for r in value["roles"] if r in target["roles"]]
        dropped = [r for r in value["roles"] if r not in target["roles"]]
        if dropped:
            notes.append(f"{path}: approver.roles {dropped} are outside what a higher file "
                         "allows; dropped")
        target["roles"] = kept
        sources["approver.roles"] = sources["approver.roles"] + (path,)
