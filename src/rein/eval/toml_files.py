"""The TOML files of a suite (``scenario.toml``, ``eval.toml``, a Harbor ``task.toml``), read
so that whatever a file holds is refused with its code, its place and a fix, never a
traceback: a syntax error at its line and column, a file nested past the parser's recursion
or holding an integer too long to convert (which ``tomllib`` raises as other exceptions), a
number JSON cannot carry (the digests of scenarios and configurations are taken over JSON)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rein.errors import ConfigError, Location

_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)")


def read_toml(path: Path, *, code: str, what: str, json_numbers: bool = True
              ) -> dict[str, Any]:
    """The data of the TOML file at ``path`` (``what``: how the message names it), or a
    ConfigError with ``code``. ``json_numbers``: refuse a number JSON cannot carry (rein's
    own files; a Harbor task is read as Harbor reads it)."""
    import tomllib

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
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _AT.search(str(exc))
        line, column = (int(found[1]), int(found[2])) if found else (None, None)
        place = f" at line {line}, column {column}" if found else ""
        raise ConfigError(f"{what} is not valid TOML: {_AT.sub('', str(exc))}", code=code,
                          location=Location(file=str(path), line=line, column=column),
                          hint=f"fix the TOML syntax{place} (https://toml.io)") from None
    except (ValueError, RecursionError) as exc:
        # tomllib converts integers with int() and nests with recursion: a 5,000-digit
        # number or 100,000 nested arrays escape as these, not as TOMLDecodeError.
        why = ("nests too deeply" if isinstance(exc, RecursionError)
               else "holds a number too large to read")
        raise ConfigError(f"{what} is not valid TOML: the file {why}", code=code,
                          location=where, hint="a suite's files hold small tables of strings "
                                               "and numbers") from None
    from rein.core import config_rules

    bad = config_rules.bad_number(data) if json_numbers else None
    if bad is not None:
        key, value = bad
        why = "not a finite number" if isinstance(value, float) else "an integer beyond 2^53"
        raise ConfigError(f"{what}: {key} is {value}, {why}", code=code, location=where,
                          hint="use a finite number within 2^53: the file is digested as "
                               "JSON, which carries no other")
    return data


__all__ = ["read_toml"]
