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
    from rein.cli.workspace import workspace_option

    return workspace_option(func)


def _ws(workspace: Path | None) -> Path:
    return (workspace or Path.cwd()).resolve()


def _read_status(ws: Path, run_id: str | None) -> dict[str, Any]:
    from rein.cli.workspace import open_harness

    with open_harness(ws, create=False) as harness:
        try:
            # The sync read behind `Harness.next`: a driver turn starts no event loop.
            return harness.driver_status(run_id)
        except ReinError as exc:
            if exc.code != "STORE404" or "no .rein/" not in exc.message:
                raise
            raise ReinError(exc.message, code="STORE404",
                            hint="start one with `rein run GRAPH --approve DIGEST`") from exc


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
    """The envelope's text, read without blocking and never more than the envelope limit:
    the inbox is written by an agent, and may be a FIFO, a device or a huge file."""
    from rein.core.reading import read_small_file
    from rein.workers.driver_protocol import INBOX, MAX_ENVELOPE_BYTES, EnvelopeRefused

    if source == "-":
        binary = getattr(sys.stdin, "buffer", None)  # absent when stdin is a text stream
        raw = (binary.read(MAX_ENVELOPE_BYTES + 1) if binary is not None
               else sys.stdin.read(MAX_ENVELOPE_BYTES + 1).encode("utf-8"))
        path = Path("<stdin>")
    else:
        path = Path(source) if source else ws / INBOX
        if not path.is_absolute() and source:
            path = Path.cwd() / path
        # A plain file within the limit is read here; the loader's reader (and the YAML
        # parser it imports) only explains what is wrong with anything else.
        raw = read_small_file(path, MAX_ENVELOPE_BYTES) or _read_limited(path, source)
    if len(raw) > MAX_ENVELOPE_BYTES:
        raise EnvelopeRefused(f"the envelope is over the limit of {MAX_ENVELOPE_BYTES:,} bytes",
                              code="DRIVER_ENVELOPE_LIMIT",
                              hint="write large outputs to files in the workspace and name "
                                   "them in outputs")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeRefused(f"the envelope {path} is not UTF-8 (byte 0x{raw[exc.start]:02x} "
                              f"at offset {exc.start})", code="DRIVER_NO_ENVELOPE",
                              hint="write the envelope as UTF-8 JSON") from exc


def _read_limited(path: Path, source: str | None) -> bytes:
    """The envelope file through the loader's reader, which says what is wrong with it."""
    from rein.errors import LoadError
    from rein.formats.loader import read_limited
    from rein.workers.driver_protocol import INBOX, MAX_ENVELOPE_BYTES, EnvelopeRefused

    try:
        return read_limited(path, MAX_ENVELOPE_BYTES)
    except LoadError as exc:
        if exc.kind == "not_found":
            hint = (f"check the file's path, or leave it out to read {INBOX}" if source else
                    f"write the envelope to {INBOX} (or pass a file, or - for stdin)")
            raise EnvelopeRefused(f"no envelope at {path}", code="DRIVER_NO_ENVELOPE",
                                  hint=hint) from exc
        code = "DRIVER_ENVELOPE_LIMIT" if exc.kind == "too_large" else "DRIVER_NO_ENVELOPE"
        raise EnvelopeRefused(f"cannot read the envelope: {exc.message}", code=code,
                              hint=exc.hint) from exc


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
    from rein.workers.driver_protocol import EnvelopeRefused, parse_envelope

    ws = _ws(workspace)
    try:
        envelope = parse_envelope(_source_text(ws, source))
        submitted = _submit(ws, envelope, run_id, as_json)
    except EnvelopeRefused as exc:
        return _refused(ws, exc, run_id, as_json)
    status = submitted.status
    if as_json:
        status = {**status, "submitted": submitted.note}
    return _show(status, as_json)


def _submit(ws: Path, envelope: dict[str, Any], run_id: str | None, as_json: bool) -> Any:
    from rein.cli.run import Progress, announce
    from rein.cli.safe_output import guarded
    from rein.cli.sync import run_sync
    from rein.cli.workspace import open_harness

    def consumed(note: str) -> None:
        if not as_json:  # before the progress lines of the advance it causes
            guarded(lambda text: click.echo(text, err=True))(f"submit: {note}")

    with open_harness(ws, create=False,
                      listeners=[] if as_json else [Progress(False)]) as harness:
        announce(harness)
        return run_sync(harness.submit(envelope, run_id, consumed=consumed))


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

    from rein.engine.service import Harness
    from rein.formats.redaction import known_secrets, redact

    try:
        names = Harness.open(ws).key_variables()
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
