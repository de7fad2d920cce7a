"""``rein next``, ``rein submit``, ``rein driver schema``: an external agent drives a run.

``next`` is a read: a few queries on the run store, no engine, no lock. ``submit`` checks
the envelope against the pending instruction (anything else is refused, the instruction is
repeated and nothing changes), measures the workspace, consumes the envelope in one
transaction with its event, and advances the run under the run lock to its next wait.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option
from rein.errors import ExitCode

_run = click.option("--run", "run_id", default=None, metavar="RUN",
                    help="The run (default: the newest unfinished run in the workspace).")


def _workspace(func: Any) -> Any:
    """``--workspace DIR`` and ``--store URL``, as every command that reads or writes runs."""
    from rein.cli.workspace import workspace_option

    return workspace_option(func)


def _ws(workspace: Path | None) -> Path:
    return (workspace or Path.cwd()).resolve()


def _read_status(ws: Path, run_id: str | None) -> dict[str, Any]:
    from rein.cli.submit_turn import read_status
    from rein.cli.workspace import given_store

    return read_status(ws, run_id, given_store())


def _show(status: dict[str, Any], as_json: bool) -> int:
    from rein.cli.submit_turn import show

    return show(status, as_json)


@click.command("next")
@_run
@_workspace
@json_option
def next_command(run_id: str | None, workspace: Path | None, as_json: bool) -> int:
    """Print the one thing a run waits for: an instruction for you, or why it waits.

    Asking again prints the same instruction (same token, same attempt): `next` never
    starts new work. With --json: {"status": "instruction"|"waiting"|"done"|"stopped", ...};
    an instruction carries node, attempt, brief, outputs and respond_with (the JSON Schema
    of the envelope to send back with `rein submit`).

    \b
    Example:
      rein next
      rein next --json --run run-20260101T120000-3f9a1c

    \b
    Exit codes: 0 an instruction for you, or the run is done, 1 it stopped (reason: budget,
    timeout, blocked, failed, cancelled), 3 waiting for someone else (a person's approval,
    another process), 64 usage error. Scripts tell an instruction from the end by the JSON
    `status`.
    """
    return _show(_read_status(_ws(workspace), run_id), as_json)


@click.command("submit")
@click.argument("source", required=False, metavar="[FILE|-]")
@_run
@_workspace
@json_option
def submit_command(source: str | None, run_id: str | None, workspace: Path | None,
                   as_json: bool) -> int:
    """Answer the pending instruction with an envelope and advance the run.

    Reads the envelope from FILE, from stdin with -, or from .rein/inbox.json by default
    (so JSON never needs shell quoting). An envelope that does not answer the pending
    instruction is refused with the reason, the instruction is repeated, and nothing
    changes; the same envelope sent twice is recognised and applied once. Then prints
    what comes next, as `rein next` would.

    \b
    Example:
      rein submit                 # reads .rein/inbox.json
      rein submit - < answer.json

    \b
    Exit codes: 0 the next instruction for you, or the run is done, 1 it stopped, 3 waiting
    for someone else (a person's approval, another process), 4 envelope refused or run
    locked, 64 usage error.
    """
    from rein.cli.submit_turn import submit_turn
    from rein.cli.workspace import given_store

    return submit_turn(_ws(workspace), source, run_id, as_json, store=given_store())


@click.group("driver")
def driver() -> None:
    """The driver protocol: the shapes of instructions and envelopes.

    \b
    Example:
      rein driver schema > driver-schema.json

    \b
    Exit codes: 0 ok, 64 usage error.
    """


@driver.command("schema")
@_workspace
def schema_command(workspace: Path | None) -> int:
    """Print {"instruction": <JSON Schema>, "envelope": <JSON Schema>}.

    Each instruction's respond_with is the envelope schema narrowed to that instruction
    (its token, node, attempt, outputs and decision labels). The schemas are the same for
    every store: --store and --workspace are accepted so that one set of options works
    for all the driver commands, and read nothing.

    \b
    Example:
      rein driver schema

    \b
    Exit codes: 0 ok.
    """
    from rein.workers.driver.protocol import generic_schemas

    emit_json(generic_schemas())
    return int(ExitCode.OK)


next_ = next_command
submit = submit_command
