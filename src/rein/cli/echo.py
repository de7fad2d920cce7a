"""``click.echo`` without importing click, for the output of a driver turn.

``rein submit`` is a fresh process on every turn, and click is a large part of what it would
import. For the text it prints, click's ``echo`` does two things beyond a write and a
flush: it strips terminal escapes from a stream that is not a terminal, and it re-wraps a
stream whose encoding is misconfigured. Text without an escape, on a UTF-8 stream, is
therefore written here exactly as click writes it; anything else is handed to click.
"""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["echo"]


def echo(text: str, *, err: bool = False, file: TextIO | None = None) -> None:
    """Print ``text`` and a newline, flushed, as ``click.echo(text, file, err=err)``."""
    stream = file if file is not None else (sys.stderr if err else sys.stdout)
    if stream is None:  # no standard stream to write to: click writes nothing either
        return
    if "\x1b" in text or "utf" not in str(getattr(stream, "encoding", "")).lower():
        import click

        click.echo(text, file=file, err=err)
        return
    stream.write(text + "\n")
    stream.flush()
