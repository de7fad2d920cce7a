"""The plain ``rein dev [--json]`` and ``rein dev status [--json]``, answered without click
and without an event loop when they only read.

An agent in the development flow runs ``rein dev`` as its every turn, and most of those
turns find an instruction pending and change nothing: :func:`rein.dev.flow.advance_read`
and :func:`rein.dev.flow.status` say where the flow stands as the command would, and
this prints it exactly as the click command does. Everything else returns ``None`` and goes
through click, which acts and reports: a flow to start or continue (a run to start or
resume, a budget to raise), any error, any other argument, and output that click would
alter (terminal escapes it strips from a pipe, a stream that is not UTF-8).
"""

from __future__ import annotations

import sys
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["quick_dev"]


def quick_dev(args: Sequence[str]) -> int | None:
    """The exit code of ``rein dev ARGS``, or ``None`` to leave the command to click."""
    from rein.cli.plain import plain_dev

    parsed = plain_dev(args)
    if parsed is None or "utf" not in str(getattr(sys.stdout, "encoding", "")).lower():
        return None
    status, as_json = parsed
    from rein.dev import flow
    from rein.engine.service import Harness
    from rein.errors import ReinError

    try:
        with Harness.open(Path.cwd().resolve(), create=False) as harness:
            where = flow.status(harness) if status else flow.advance_read(harness)
    except (ReinError, OSError):
        return None  # click's command reports it, with the hints it adds
    if where is None:
        return None  # the flow acts first: the click command does it
    text = _text(where, as_json, instruction=not status)
    if text is None:
        return None
    from rein.cli.calls import note
    from rein.cli.safe_output import guarded

    note(where)
    guarded(sys.stdout.write)(text)
    guarded(sys.stdout.flush)()
    return int(where["exit_code"])


def _text(where: dict[str, Any], as_json: bool, *, instruction: bool) -> str | None:
    import json

    from rein.cli.output import shown

    if as_json:  # as emit_json prints it; JSON escapes every control character
        return json.dumps(shown(where), ensure_ascii=False, indent=2, sort_keys=False) + "\n"
    from rein.dev.render import render

    text = render(where, instruction=instruction)
    return None if "\x1b" in text else text
