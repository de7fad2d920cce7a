"""The plain driver turn, ``rein next [--json] [--run RUN]``, answered without click.

An IDE agent runs ``rein next`` as a fresh process every turn, and importing click is the
largest part of what that command costs once the store is read. The common forms are read
here and printed exactly as the click command prints them. Anything else returns ``None``
and goes through click: ``--help``, ``--workspace``, ``--store``, any other argument, an
error to report (``next`` is a read, so asking again through click changes nothing), and
output that click would alter (text with terminal escapes, which it strips from a pipe;
a stream that is not UTF-8, which it re-wraps).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


def quick_next(args: Sequence[str]) -> int | None:
    """The exit code of ``rein next ARGS``, or ``None`` to leave the command to click."""
    parsed = _parse(args)
    if parsed is None or "utf" not in str(getattr(sys.stdout, "encoding", "")).lower():
        return None
    as_json, run_id = parsed
    from rein.engine.service import Harness
    from rein.errors import ReinError

    try:
        with Harness.open(Path.cwd().resolve(), create=False) as harness:
            status = harness.driver_status(run_id)
    except (ReinError, OSError):
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


def _text(status: dict[str, Any], as_json: bool) -> str | None:
    from rein.cli.output import shown

    if as_json:  # as emit_json prints it; JSON escapes every control character
        return json.dumps(shown(status), ensure_ascii=False, indent=2, sort_keys=False)
    from rein.workers.driver.status import render

    text = render(status)
    return None if "\x1b" in text else text


__all__ = ["quick_next"]
