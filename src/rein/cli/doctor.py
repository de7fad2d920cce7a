"""``rein doctor``: check this machine's setup for rein and say how to fix each gap."""

from __future__ import annotations

from pathlib import Path

import click

from rein.cli.output import emit_json, json_option
from rein.cli.workspace import given_store, resolve_workspace, workspace_option
from rein.errors import ExitCode

_MARK = {"ok": "ok  ", "missing": "MISS", "warning": "warn", "info": "info"}


@click.command("doctor")
@workspace_option
@json_option
def doctor_command(workspace: Path | None, as_json: bool) -> int:
    """Check the setup: store, approver, providers, sandbox, Graphviz, Chromium, extras.

    Each line is one check: ok, MISS (what it serves cannot work), warn (it works, less
    well or less safely) or info, with how to fix a gap. A check is required when this
    workspace uses what it serves (its store, the providers its rein.toml names, the
    approver's signing files); only a required one that is missing fails the command.
    Nothing is created or written.

    \b
    Example:
      rein doctor
      rein doctor --json
      rein doctor --store postgresql://rein@db/rein

    \b
    Exit codes: 0 nothing required is missing, 1 something required is missing, 64 usage
    error.
    """
    from rein.engine.service import Harness

    found = Harness.check_setup(resolve_workspace(workspace), store_url=given_store())
    failing = [c.name for c in found if c.failing]
    if as_json:
        emit_json({"ok": not failing, "missing": failing,
                   "checks": [c.to_json() for c in found]})
    else:
        width = max(len(c.title) for c in found)
        for c in found:
            click.echo(f"{_MARK[c.status]}  {c.title.ljust(width)}  {c.detail}")
            if c.fix and c.status != "ok":
                click.echo(f"      {''.ljust(width)}  fix: {c.fix}")
        click.echo(f"missing and required: {', '.join(failing)}" if failing
                   else "nothing required is missing")
    return int(ExitCode.FAILURE if failing else ExitCode.OK)


doctor = doctor_command

__all__ = ["doctor"]
