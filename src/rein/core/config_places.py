"""Where ``rein.toml`` files may be, with nothing imported beyond the standard library, so
that a command on a fast path (``rein graph validate`` on every save) learns that there are
none without importing :mod:`rein.config` (:mod:`rein.config.files` says which file may
say what).

The places move with the environment (``REIN_MANAGED_CONFIG``, ``REIN_USER_CONFIG``,
``XDG_CONFIG_HOME``, ``HOME``): a process can only narrow itself with them.
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


def any_config(workspace: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether any of the three files exists (if none does, the configuration is empty).

    Anything at the path counts, not only a regular file: a managed policy that is a pipe
    or a folder must fail loudly when read, not be skipped as if it were absent."""
    return any(path.exists() for _scope, path in config_paths(workspace, env))
