"""Printing for people and for scripts. The engine never formats; this module does.

Every JSON object and every error printed here has the known secrets of the process
environment redacted (:mod:`rein.formats.redaction`), as the store redacts what it writes:
an error may quote the value that caused it. The environment is read for its secrets once
per command, when it first prints, not again for every line of an event stream.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from rein.errors import ExitCode, ReinError
from rein.formats.redaction import Secrets, known_secrets, redact

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

_READ: list[Secrets] = []  # the environment's known secrets, once read


def environment_secrets() -> Secrets:
    """The known secrets of the process environment, read at the first call of a command
    (:func:`read_environment_anew` starts a command)."""
    if not _READ:
        _READ.append(known_secrets(os.environ))
    return _READ[0]


def read_environment_anew() -> None:
    """Forget the environment's secrets: the next print reads the environment again (a
    command run in a process that ran others reads the environment it starts with)."""
    _READ.clear()


def shown(value: Any) -> Any:
    """``value`` as it may be printed: the environment's known secrets replaced."""
    return redact(value, environment_secrets())


def emit_json(value: Any) -> None:
    """Exactly one JSON object on stdout."""
    import click  # imported where it prints: `rein next`'s quick path prints without it

    click.echo(json.dumps(shown(value), ensure_ascii=False, indent=2, sort_keys=False))


def emit_json_line(value: Any) -> None:
    """One JSON line (event streams)."""
    import click

    click.echo(json.dumps(shown(value), ensure_ascii=False, separators=(",", ":")))
    sys.stdout.flush()


def report_error(exc: ReinError, args: Sequence[str]) -> None:
    """An error as the user asked for it: a JSON object with --json, a short text otherwise."""
    if "--json" in args:
        emit_json({"error": exc.to_json()})
    else:
        import click

        click.echo(f"error: {shown(str(exc))}", err=True)


def json_option(func: Any) -> Any:
    import click

    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def validation_exit_code(*, failed: bool, warned: bool, strict: bool) -> int:
    """The ``validate`` commands' exit code: 1 when anything failed, 2 for warnings under
    ``--strict``, else 0."""
    if failed:
        return int(ExitCode.FAILURE)
    if strict and warned:
        return int(ExitCode.WARNINGS)
    return int(ExitCode.OK)
