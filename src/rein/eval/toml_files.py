"""The TOML files of a suite (``scenario.toml``, ``eval.toml``, a Harbor ``task.toml``), read
so that whatever a file holds is refused with its code, its place and a fix, never a
traceback (:func:`rein.config.parse_toml`, as for a ``rein.toml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rein.errors import ConfigError, Location


def read_toml(path: Path, *, code: str, what: str, json_numbers: bool = True
              ) -> dict[str, Any]:
    """The data of the TOML file at ``path`` (``what``: how the message names it), or a
    ConfigError with ``code``. ``json_numbers``: refuse a number JSON cannot carry (rein's
    own files, digested as JSON; a Harbor task is read as Harbor reads it)."""
    from rein.config import parse_toml

    where = Location(file=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {what}: it is not UTF-8 ({exc.reason})", code=code,
                          location=where, hint="save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror or exc}", code=code,
                          location=where, hint="check that the file exists and that rein "
                                               "may read it") from None
    return parse_toml(text, path, code=code, what=what, json_numbers=json_numbers)


__all__ = ["read_toml"]
