"""``rein next``, ``rein submit``, ``rein driver schema``: an external agent drives a run.

``next`` is a read: a few queries on the run store, no engine, no lock. ``submit`` checks
the envelope against the pending instruction (anything else is refused, the instruction is
repeated and nothing changes), measures the workspace, consumes the envelope in one
transaction with its event, and advances the run under the run lock to its next wait.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option
from rein.errors import ExitCode, ReinError

_run = click.option("--run", "run_id", default=None, metavar="RUN",
                    help="The run (default: the newest unfinished run in the workspace).")


def _workspace(func: Any) -> Any:
    """``--workspace DIR`` and ``--store URL``, as every command that reads or writes runs."""
    from rein.cli.run import workspace_option

    return workspace_option(func)


def _ws(workspace: Path | None) -> Path:
    return (workspace or Path.cwd()).resolve()


def _open_for_reading(ws: Path) -> Any:
    """The run store, opened without creating one; a damaged embedded file is a STORE001."""
    from rein.cli.run import given_store, open_store
    from rein.errors import StoreError
    from rein.store.open import PG_SCHEMES, store_url

    url = store_url(ws, given_store())
    try:
        store = open_store(ws, create=False)
    except StoreError as exc:
        if url is not None and url.startswith(PG_SCHEMES):
            raise
        cause = exc.__cause__ or exc.message
        raise StoreError(f"cannot read the run store {url or ws / '.rein' / 'rein.db'}: "
                         f"{cause}", code="STORE001",
                         hint="the file is damaged or not rein's; move .rein/ aside to start "
                              "afresh") from exc
    if store is None:
        raise StoreError(f"no runs in {ws} (no .rein/ store yet)", code="STORE404",
                         hint="start one with `rein run GRAPH --approve DIGEST`")
    return store


def _read_status(ws: Path, run_id: str | None) -> dict[str, Any]:
    import sqlite3

    from rein.errors import StoreError
    from rein.workers.driver_status import status_of

    store = _open_for_reading(ws)
    try:
        return status_of(store, ws, run_id)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the run store {store.url}: {exc}", code="STORE001",
                         hint="the file is damaged or not rein's; move .rein/ aside to start "
                              "afresh") from exc
    finally:
        store.close()


def _show(status: dict[str, Any], as_json: bool) -> int:
    """Print ``status``; its exit code stands even when nobody reads the output."""
    from rein.cli.safe_output import guarded
    from rein.workers.driver_status import render

    if as_json:
        guarded(emit_json)(status)
    else:
        guarded(click.echo)(render(status))
    guarded(sys.stdout.flush)()
    return int(status["exit_code"])


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
    Exit codes: 0 the run is done, 1 it stopped (reason: budget, timeout, blocked, failed,
    cancelled), 3 waiting (for you or a person), 64 usage error.
    """
    return _show(_read_status(_ws(workspace), run_id), as_json)


def _source_text(ws: Path, source: str | None) -> str:
    from rein.workers.driver_protocol import INBOX, EnvelopeRefused

    if source == "-":
        return sys.stdin.read()
    path = Path(source) if source else ws / INBOX
    if not path.is_absolute() and source:
        path = Path.cwd() / path
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        hint = (f"check the file's path, or leave it out to read {INBOX}" if source else
                f"write the envelope to {INBOX} (or pass a file, or - for stdin)")
        raise EnvelopeRefused(f"no envelope at {path}", code="DRIVER_NO_ENVELOPE",
                              hint=hint) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvelopeRefused(f"cannot read the envelope {path}: {exc}",
                              code="DRIVER_NO_ENVELOPE") from exc


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
    Exit codes: 0 the run is done, 1 it stopped, 3 waiting (the next instruction or a
    person), 4 envelope refused or run locked, 64 usage error.
    """
    from rein.cli.driver_submit import apply
    from rein.workers.driver_protocol import EnvelopeRefused, parse_envelope

    ws = _ws(workspace)
    try:
        envelope = parse_envelope(_source_text(ws, source))
        status, note = apply(ws, envelope, run_id, as_json)
    except EnvelopeRefused as exc:
        return _refused(ws, exc, run_id, as_json)
    if as_json:
        status = {**status, "submitted": note}
    return _show(status, as_json)


def _refused(ws: Path, exc: ReinError, run_id: str | None, as_json: bool) -> int:
    try:
        pending: dict[str, Any] | None = _read_status(ws, run_id)
    except ReinError:
        pending = None
    problems = list(exc.fields.get("problems") or []) if hasattr(exc, "fields") else []
    from rein.cli.safe_output import guarded

    # A refusal quotes the envelope it refuses: what it quotes is redacted like the store.
    problems, message, error = _redact(ws, [problems, str(exc), exc.to_json()])
    echo = guarded(click.echo)
    if as_json:
        guarded(emit_json)({"status": "refused", "error": error, "problems": problems,
                            "pending": pending, "exit_code": int(ExitCode.REFUSED)})
    else:
        echo(f"REFUSED: {message}", err=True)
        for problem in problems:
            echo(f"  - {problem}", err=True)
        if pending is not None:
            from rein.workers.driver_status import render

            echo("nothing changed; still pending:\n", err=True)
            echo(render(pending))
    guarded(sys.stdout.flush)()
    return int(ExitCode.REFUSED)


def _redact(ws: Path, value: Any) -> Any:
    """``value`` with every known secret of this workspace replaced, as the store writes."""
    import os

    from rein.formats.redaction import known_secrets, redact
    from rein.store.open import key_variables

    try:
        names = key_variables(ws)
    except ReinError:
        names = ()
    return redact(value, known_secrets(os.environ, names))


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
    from rein.workers.driver_protocol import generic_schemas

    emit_json(generic_schemas())
    return int(ExitCode.OK)


next_ = next_command
submit = submit_command
