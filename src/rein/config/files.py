"""Where ``rein.toml`` files may be, kept apart from :mod:`rein.config` so that a command
can learn that there are none without importing the merge machinery (``rein next`` answers
every turn of a driver and must stay fast).

Two sets of places. :func:`config_paths` are the files of everything else, which the
environment may move (``REIN_MANAGED_CONFIG``, ``REIN_USER_CONFIG``, ``XDG_CONFIG_HOME``,
``HOME``): a process can only narrow itself with them. :func:`authority_paths` are the only
files that say who may answer approvals: the managed file at its fixed path and the file in
the account's home as the password database gives it. No variable moves them, so a process
cannot name a file it wrote as the one that makes it an approver.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

MANAGED_CONFIG = Path("/etc/rein/rein.toml")


def config_paths(workspace: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """The three candidate files, most trusted first (whether or not they exist)."""
    env = os.environ if env is None else env
    managed = Path(env.get("REIN_MANAGED_CONFIG") or MANAGED_CONFIG)
    if env.get("REIN_USER_CONFIG"):
        user = Path(env["REIN_USER_CONFIG"])
    else:
        base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
        user = Path(base) / "rein" / "rein.toml"
    return [("managed", managed), ("user", user), ("project", Path(workspace) / "rein.toml")]


def account_home() -> Path | None:
    """The home of the process's real user id as the password database gives it, never
    ``$HOME``; ``None`` without a passwd entry (a bare container) or on Windows."""
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, OSError):
        return None


def authority_paths() -> list[tuple[str, Path]]:
    """The files that say who may answer approvals, most trusted first (whether or not they
    exist): the managed file at its fixed path, then the account's own
    ``~/.config/rein/rein.toml`` with ``~`` from the password database."""
    home = account_home()
    out = [("managed", MANAGED_CONFIG)]
    if home is not None:
        out.append(("user", home / ".config" / "rein" / "rein.toml"))
    return out


def any_config(workspace: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether any of the three files exists (if none does, the configuration is empty).

    Anything at the path counts, not only a regular file: a managed policy that is a pipe
    or a folder must fail loudly when read, not be skipped as if it were absent."""
    return any(path.exists() for _scope, path in config_paths(workspace, env))
