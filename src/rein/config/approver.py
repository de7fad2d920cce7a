"""``[approver]``: who answers approvals on this machine, and what binds them.

Who may approve is read only from the files :func:`rein.config.files.authority_paths` names:
the managed ``/etc/rein/rein.toml`` and the ``~/.config/rein/rein.toml`` of the account's home
as the password database gives it. Never from a file the environment names
(``REIN_USER_CONFIG``, ``XDG_CONFIG_HOME``, ``HOME``) and never from the project's: a process
that could choose the file could make itself an approver. Those files' ``[approver]``, and
their ``[dev] plan_roles``, are dropped with a note.

Keys, and how the user file combines with the managed one:

``id``                    the approver's name; the most trusted file that sets it wins
``roles``                 gate roles held; a user file only narrows a managed list
``answer_when_confined``  answer from a process under no-new-privileges (off by default);
                          granting, so both files must allow it
``allowed_signers``       an ssh allowed-signers file: every accept or decline must then be
                          signed by the key of the principal ``id``; the most trusted wins
``signing_key``           the key ``rein approvals`` signs with (the user's choice)

and ``[dev] plan_roles``: the roles the development flow's plan approval asks for (the most
trusted file that sets it wins). Paths take ``~`` as the account's home, never ``$HOME``, and
a relative path is relative to the file that names it.

Without an ``id`` the approver is the OS account, holding no roles: roles need a named person.
The identity is as strong as the file that names it: an unconfined process running as the
same OS user can write the user file. A managed file, which that user cannot write, is what
makes roles binding against it, and signed approvals are what make an answer its person's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from rein.core import config_rules as rules
from rein.core.frozen import Frozen, set_field

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

OS_ACCOUNT = "the OS account"
KEYS = rules.APPROVER_KEYS
_PATH_KEYS = rules.APPROVER_PATH_KEYS


class Approver(Frozen):
    """Who answers approvals here, the gate ``roles`` they hold, and what binds an answer."""

    id: str
    roles: tuple[str, ...] = ()
    source: str = ""  # the rein.toml that named them, or "the OS account" when none did
    account: str = ""  # the OS account of the process's real user id ("": ``id``)
    confined_ok: bool = False  # answer_when_confined: a confined process may answer
    # the files that say so (a confined writer voids it)
    confined_ok_files: tuple[str, ...] = ()
    allowed_signers: str | None = None  # set: every accept or decline is signed by ``id``'s key
    signing_key: str | None = None  # the key ``rein approvals`` signs with

    def __post_init__(self) -> None:
        if not self.account:
            set_field(self, "account", self.id)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "roles": list(self.roles), "source": self.source,
                "account": self.account, "answer_when_confined": self.confined_ok,
                "allowed_signers": self.allowed_signers, "signing_key": self.signing_key}


def approver_of(section: Mapping[str, Any], sources: Mapping[str, tuple[str, ...]]
                ) -> Approver:
    """The approver a merged ``[approver]`` names; else the OS account, holding no roles."""
    account = os_account()
    extra: dict[str, Any] = {
        "account": account, "confined_ok": section.get("answer_when_confined") is True,
        "confined_ok_files": tuple(sources.get("approver.answer_when_confined") or ()),
        "allowed_signers": section.get("allowed_signers"),
        "signing_key": section.get("signing_key")}
    if section.get("id"):
        source = (sources.get("approver.id") or ("",))[0]
        return Approver(id=str(section["id"]), roles=tuple(section.get("roles") or ()),
                        source=source, **extra)
    return Approver(id=account, roles=(), source=OS_ACCOUNT, **extra)


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
    """Type-check one file's ``[approver]`` and ``[dev] plan_roles`` (CFG004 through
    ``bad``; the rules: :mod:`rein.core.config_rules`)."""
    approver = data.get("approver", {})
    if not isinstance(approver, dict):
        raise bad(path, "approver", "approver", "must be a table")
    for key, value in approver.items():
        if (problem := rules.approver_problem(key, value)) is None:
            continue
        message, hint = problem
        if message == rules.UNKNOWN_KEY:
            from rein.core.suggest import with_suggestion

            hint = with_suggestion(f"known keys: {', '.join(KEYS)}", key, KEYS)
        raise bad(path, "approver", key, message, hint)
    dev = data.get("dev")
    if isinstance(dev, dict) and "plan_roles" in dev and not rules.role_list(dev["plan_roles"]):
        raise bad(path, "dev", "plan_roles", "must be a list of role names",
                  'for example: plan_roles = ["tech-lead"]')


def authority_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of one file that say who may approve: ``[approver]`` and ``[dev]
    plan_roles`` (empty when it has neither)."""
    out: dict[str, Any] = {}
    if isinstance(data.get("approver"), dict):
        out["approver"] = dict(data["approver"])
    dev = data.get("dev")
    if isinstance(dev, dict) and "plan_roles" in dev:
        out["plan_roles"] = list(dev["plan_roles"])
    return out


def without_authority(data: dict[str, Any], notes: list[str], path: Path, *,
                      quiet: bool = False, project: bool = False) -> dict[str, Any]:
    """``data`` without what says who may approve. ``quiet``: the file is one of the
    account's own, read for that apart (:func:`merge_authority`), so nothing is lost."""
    found = authority_of(data)
    if not found:
        return data
    out = {k: v for k, v in data.items() if k != "approver"}
    if "plan_roles" in found:
        out["dev"] = {k: v for k, v in data["dev"].items() if k != "plan_roles"}
    if not quiet:
        what = " and ".join(name for name, key in (("[approver]", "approver"),
                                                   ("[dev] plan_roles", "plan_roles"))
                            if key in found)
        why = ("a repository does not say who reads it" if project else
               "who may answer approvals is read only from the managed file and the "
               "account's own, never a file the environment names")
        notes.append(f"{path}: {what} ignored ({why})")
    return out


def merge_authority(target: dict[str, Any], sources: dict[str, tuple[str, ...]],
                    notes: list[str], found: Mapping[str, Any], path: str) -> None:
    """Merge one authority file's parts (most trusted first) into the merged data."""
    if "approver" in found:
        value = {k: _absolute(v, path) if k in _PATH_KEYS else v
                 for k, v in found["approver"].items()}
        merge_approver(target.setdefault("approver", {}), sources, notes, value, path)
    if "plan_roles" in found:
        dev = target.setdefault("dev", {})
        if "plan_roles" not in dev:
            dev["plan_roles"], sources["dev.plan_roles"] = list(found["plan_roles"]), (path,)
        elif list(found["plan_roles"]) != dev["plan_roles"]:
            notes.append(f"{path}: dev.plan_roles cannot change {dev['plan_roles']}; kept "
                         "those")


def _absolute(value: str, path: str) -> str:
    """A path of ``[approver]``: ``~`` is the account's home, relative is to the file."""
    from rein.config.files import account_home

    text = str(value)
    if text == "~" or text.startswith("~/"):
        home = account_home()
        if home is not None:
            text = str(home) + text[1:]
    return str(Path(path).parent / text) if not Path(text).is_absolute() else text


def merge_approver(target: dict[str, Any], sources: dict[str, tuple[str, ...]],
                   notes: list[str], value: dict[str, Any], path: str) -> None:
    """``id`` and ``allowed_signers``: the most trusted file wins; ``roles``: a lower file
    only narrows; ``answer_when_confined``: both must allow; ``signing_key``: the lower
    file's choice."""
    for key in ("id", "allowed_signers"):
        if key not in value:
            continue
        if key not in target:
            target[key], sources[f"approver.{key}"] = value[key], (path,)
        elif value[key] != target[key]:
            notes.append(f"{path}: approver.{key} = {value[key]!r} cannot change "
                         f"{target[key]!r}; kept {target[key]!r}")
    if "signing_key" in value:
        target["signing_key"], sources["approver.signing_key"] = value["signing_key"], (path,)
    if "answer_when_confined" in value:
        allowed = value["answer_when_confined"]
        if "answer_when_confined" not in target or (target["answer_when_confined"]
                                                    and not allowed):
            target["answer_when_confined"] = allowed
            sources["approver.answer_when_confined"] = (path,)
        elif allowed and not target["answer_when_confined"]:
            notes.append(f"{path}: approver.answer_when_confined = true cannot widen false")
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
