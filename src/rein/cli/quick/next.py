"""The plain driver turn, ``rein next [--json] [--run RUN]``, answered without click.

An IDE agent runs ``rein next`` as a fresh process every turn, and importing click is the
largest part of what that command costs once the store is read. The common forms are read
here and printed exactly as the click command prints them. Anything else returns ``None``
and goes through click: ``--help``, ``--workspace``, ``--store``, any other argument, an
error to report (``next`` is a read, so asking again through click changes nothing), and
output that click would alter (text with terminal escapes, which it strips from a pipe;
a stream that is not UTF-8, which it re-wraps).

The answer is read first by :func:`rein.workers.driver.glance.glance`, which needs
neither the Harness nor :mod:`pathlib` and answers the common states (an instruction, a
wait for a person, a run that ended well or was cancelled) from the embedded store; every
other state, and any ``rein.toml``, goes through the Harness as before. The two give the
same answer (tests/workers/driver/test_glance.py).
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

# What makes rein.formats.redaction find a secret in an environment: its SECRET_PREFIX and
# DEFAULT_KEY_VARIABLES (tests/cli/test_next_quick.py holds them equal). Without any of
# these there is nothing to redact, and the redaction's modules are not imported.
SECRET_PREFIX = "REIN_SECRET_"
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def quick_next(args: Sequence[str]) -> int | None:
    """The exit code of ``rein next ARGS``, or ``None`` to leave the command to click."""
    parsed = _parse(args)
    if parsed is None or "utf" not in str(getattr(sys.stdout, "encoding", "")).lower():
        return None
    as_json, run_id = parsed
    from rein.workers.driver.glance import glance

    try:
        status = glance(os.getcwd(), run_id)
    except OSError:  # the working directory is gone: the Harness's way says so
        status = None
    if status is None:
        status = _through_the_harness(run_id)
    if status is None:
        return None  # click's command reports it, with the hints it adds
    text = _text(status, as_json)
    if text is None:
        return None
    from rein.cli.calls import note
    from rein.cli.safe_output import guarded

    note(status)
    guarded(sys.stdout.write)(text + "\n")
    guarded(sys.stdout.flush)()
    return int(status["exit_code"])


def _parse(args: Sequence[str]) -> tuple[bool, str | None] | None:
    """``(as_json, run_id)`` for the forms answered here, else ``None``."""
    from rein.cli.plain import plain_options

    parsed = plain_options(args, takes_source=False)
    return None if parsed is None else parsed[1:]


def _through_the_harness(run_id: str | None) -> dict[str, Any] | None:
    """The status as the Harness reads it, or ``None`` on an error (click reports it)."""
    from pathlib import Path

    from rein.engine.service import Harness
    from rein.errors import ReinError

    try:
        with Harness.open(Path.cwd().resolve(), create=False) as harness:
            return harness.driver_status(run_id)
    except (ReinError, OSError):
        return None


def _text(status: dict[str, Any], as_json: bool) -> str | None:
    if as_json:  # as emit_json prints it; JSON escapes every control character
        return json.dumps(_shown(status), ensure_ascii=False, indent=2, sort_keys=False)
    from rein.workers.driver.render import render

    text = render(status)
    return None if "\x1b" in text else text


def _shown(status: dict[str, Any]) -> Any:
    """``status`` with the environment's known secrets replaced (rein.cli.output.shown),
    the redaction imported only where the environment may hold one."""
    if not may_hold_secrets(os.environ):
        return status
    from rein.cli.output import shown

    return shown(status)


def may_hold_secrets(env: Mapping[str, str]) -> bool:
    """Whether ``env`` has a variable whose value rein.formats.redaction takes for a secret
    (when it is long enough)."""
    return any(name.startswith(SECRET_PREFIX) for name in env) or \
        any(env.get(name) for name in KEY_VARIABLES)


__all__ = ["KEY_VARIABLES", "SECRET_PREFIX", "may_hold_secrets", "quick_next"]
