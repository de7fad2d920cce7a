"""The plain ``rein submit [FILE|-] [--json] [--run RUN]``, answered without click.

A driver turn is a fresh process, and after the engine, click is the largest thing
``rein submit`` imports. The plain forms are parsed here and run by the very code the click
command runs (:func:`rein.cli.submit_turn.submit_turn`), printing the same thing. Anything
else returns ``None`` before anything is read or written, and goes through click:
``--help``, ``--workspace``, ``--store``, ``--run=RUN``, ``--``, an option click would
reject or a second file, so that usage errors and help read as they always have.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["quick_submit"]


def quick_submit(args: Sequence[str]) -> int | None:
    """The exit code of ``rein submit ARGS``, or ``None`` to leave the command to click."""
    parsed = _parse(args)
    if parsed is None:
        return None
    source, as_json, run_id = parsed
    from rein.cli.submit_turn import submit_turn

    return submit_turn(Path.cwd().resolve(), source, run_id, as_json, store=None)


def _parse(args: Sequence[str]) -> tuple[str | None, bool, str | None] | None:
    """``(source, as_json, run_id)`` for the forms answered here, else ``None``."""
    from rein.cli.plain import plain_options

    return plain_options(args, takes_source=True)
