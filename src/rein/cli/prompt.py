"""Yes/no questions on a terminal. "No" is an answer, not a failure: the command says what
did not happen and how to do it later, and exits 4 (refused) without an ``error:`` line.

End of input (Ctrl-D) at the prompt is a "no" too, so a person never sees click's
``Aborted!`` for declining.
"""

from __future__ import annotations

import click

from rein.errors import ExitCode


def approved(question: str, *, err: bool = False) -> bool:
    """Ask ``question`` [y/N]; only an explicit yes is a yes."""
    try:
        return click.confirm(question, default=False, err=err)
    except click.exceptions.Abort:
        click.echo("", err=err)  # the prompt's line is left open by Ctrl-D
        return False


def not_approved(what: str, later: str | None = None) -> int:
    """Say what the "no" meant (``what``) and how to say yes later; the refused exit code."""
    click.echo(f"not approved: {what}", err=True)
    if later:
        click.echo(f"  {later}", err=True)
    return int(ExitCode.REFUSED)
