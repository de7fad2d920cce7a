"""Where ``rein.toml`` files may be.

Two sets of places. :func:`config_paths` (:mod:`rein.core.config_places`, which imports
nothing of rein) are the files of everything else, which the environment may move
(``REIN_MANAGED_CONFIG``, ``REIN_USER_CONFIG``, ``XDG_CONFIG_HOME``, ``HOME``): a process can only narrow itself with them. :func:`authority_paths` are the only
files that say who may answer approvals: the managed file at its fixed path and the file in
the account's home as the password database gives it. No variable moves them, so a process
cannot name a file it wrote as the one that makes it an approver.
"""

from __future__ import annotations

from pathlib import Path

from rein.core import config_places as places
from rein.core.config_places import any_config, config_paths

MANAGED_CONFIG = Path(places.MANAGED_CONFIG)  # the managed file at its fixed path

__all__ = ["MANAGED_CONFIG", "account_home", "any_config", "authority_paths", "config_paths"]


def account_home() -> Path | None:
    """The home of the process's real user id as the password database gives it, never
    ``$HOME``; ``None`` without a passwd entry (a bare container) or on Windows."""
    home = places.account_home()
    return None if home is None else Path(home)


def authority_paths() -> list[tuple[str, Path]]:
    """The files that say who may answer approvals, most trusted first (whether or not they
    exist): the managed file at its fixed path, then the account's own
    ``~/.config/rein/rein.toml`` with ``~`` from the password database."""
    return [(scope, Path(path)) for scope, path in places.authority_files()]
