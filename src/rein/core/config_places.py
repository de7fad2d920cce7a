"""Where ``rein.toml`` files may be, with nothing imported beyond ``os``, so that a command
on a fast path (``rein graph validate`` on every save, ``rein next`` every turn) learns that
there are none without importing :mod:`rein.config` or even :mod:`pathlib`
(:mod:`rein.config.files` says which file may say what).

The places move with the environment (``REIN_MANAGED_CONFIG``, ``REIN_USER_CONFIG``,
``XDG_CONFIG_HOME``, ``HOME``): a process can only narrow itself with them.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

MANAGED_CONFIG = "/etc/rein/rein.toml"
# What pathlib's Path.exists() takes for "not there"; any other error is raised.
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def config_files(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None
                 ) -> list[tuple[str, str]]:
    """The three candidate files, most trusted first (whether or not they exist)."""
    env = os.environ if env is None else env
    managed = env.get("REIN_MANAGED_CONFIG") or MANAGED_CONFIG
    if env.get("REIN_USER_CONFIG"):
        user = env["REIN_USER_CONFIG"]
    else:
        home = env.get("HOME") or os.path.expanduser("~")  # what Path.home() reads
        base = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        user = os.path.join(base, "rein", "rein.toml")
    return [("managed", managed), ("user", user),
            ("project", os.path.join(workspace, "rein.toml"))]


def config_paths(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None
                 ) -> list[tuple[str, Path]]:
    """:func:`config_files` as paths."""
    from pathlib import Path

    return [(scope, Path(path)) for scope, path in config_files(workspace, env)]


def exists(path: str) -> bool:
    """Whether anything is at ``path``, as :meth:`pathlib.Path.exists` says it: an error
    other than "not there" is raised, not taken for an absent file."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return False
        raise
    except ValueError:  # a NUL in the path: nothing can be there
        return False
    return True


def account_home() -> str | None:
    """The home of the process's real user id as the password database gives it, never
    ``$HOME``; ``None`` without a passwd entry (a bare container) or on Windows."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return None


def authority_files() -> list[tuple[str, str]]:
    """The files that say who may answer approvals, most trusted first (whether or not they
    exist): the managed file at its fixed path, then the account's own
    ``~/.config/rein/rein.toml`` with ``~`` from the password database. No variable moves
    them (:mod:`rein.config.files`)."""
    home = account_home()
    out = [("managed", MANAGED_CONFIG)]
    if home is not None:
        out.append(("user", os.path.join(home, ".config", "rein", "rein.toml")))
    return out


def any_config(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None
               ) -> bool:
    """Whether any of the three files exists (if none does, the configuration is empty).

    Anything at the path counts, not only a regular file: a managed policy that is a pipe
    or a folder must fail loudly when read, not be skipped as if it were absent."""
    return any(exists(path) for _scope, path in config_files(workspace, env))


__all__ = ["MANAGED_CONFIG", "account_home", "any_config", "authority_files", "config_files",
           "config_paths", "exists"]
