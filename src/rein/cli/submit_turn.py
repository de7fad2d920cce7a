"""One ``rein submit``: read the envelope, check and consume it, advance the run, print
what comes next; or refuse it, repeat the pending instruction and change nothing.

Shared by the click command (:mod:`rein.cli.driver`) and the plain forms answered without
click (:mod:`rein.cli.quick.submit`), so that the two print the very same thing. Nothing
here imports click: the output goes through :func:`rein.cli.echo.echo`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rein.cli.echo import echo
from rein.cli.safe_output import guarded
from rein.errors import ExitCode, ReinError

__all__ = ["read_status", "show", "submit_turn"]


def submit_turn(ws: Path, source: str | None, run_id: str | None, as_json: bool, *,
                store: str | None) -> int:
    """The exit code of ``rein submit [SOURCE] [--run RUN] [--json]`` in ``ws``."""
    from rein.cli.calls import note
    from rein.workers.driver.protocol import EnvelopeRefused, parse_envelope

    try:
        envelope = parse_envelope(_source_text(ws, source))
        if isinstance(envelope.get("token"), str):
            note(answered=envelope["token"])
        submitted = _submit(ws, envelope, run_id, as_json, store)
    except EnvelopeRefused as exc:
        note(code=exc.code)
        return _refused(ws, exc, run_id, as_json, store)
    status = submitted.status
    if as_json:
        status = {**status, "submitted": submitted.note}
    return show(status, as_json)


def read_status(ws: Path, run_id: str | None, store: str | None) -> dict[str, Any]:
    """What ``rein next`` prints, as data."""
    from rein.engine.service import Harness

    with Harness.open(ws, store_url=store, create=False) as harness:
        try:
            # The sync read behind `Harness.next`: a driver turn starts no event loop.
            return harness.driver_status(run_id)
        except ReinError as exc:
            if exc.code != "STORE404" or "no .rein/" not in exc.message:
                raise
            from rein.workers.driver.status import no_run_hint

            raise ReinError(exc.message, code="STORE404", hint=no_run_hint(ws)) from exc


def show(status: dict[str, Any], as_json: bool) -> int:
    """Print ``status``; its exit code stands even when nobody reads the output."""
    from rein.cli.calls import note
    from rein.workers.driver.status import render

    note(status)
    if as_json:
        guarded(_emit_json)(status)
    else:
        guarded(echo)(render(status))
    guarded(sys.stdout.flush)()
    return int(status["exit_code"])


def _emit_json(value: Any) -> None:
    """One JSON object on stdout, as :func:`rein.cli.output.emit_json` prints it."""
    from rein.cli.output import shown

    echo(json.dumps(shown(value), ensure_ascii=False, indent=2, sort_keys=False))


def _submit(ws: Path, envelope: dict[str, Any], run_id: str | None, as_json: bool,
            store: str | None) -> Any:
    from rein.cli.live import Progress, history
    from rein.cli.sync import run_sync
    from rein.engine.service import Harness

    def consumed(note: str) -> None:
        if not as_json:  # before the progress lines of the advance it causes
            guarded(lambda text: echo(text, err=True))(f"submit: {note}")

    # The lines tell this turn only: the view starts from what the run did before, which
    # it reads once the first event (the answer) names the run.
    progress = Progress(False)
    with Harness.open(ws, store_url=store, create=False,
                      listeners=[] if as_json else [progress]) as harness:
        progress.primer = lambda event: history(harness, event)
        # stderr, so that --json output stays one object
        if (notice := harness.trust_notice()) is not None:
            echo(f"notice: {notice}", err=True)
        return run_sync(harness.submit(envelope, run_id, consumed=consumed))


def _source_text(ws: Path, source: str | None) -> str:
    """The envelope's text, read without blocking and never more than the envelope limit:
    the inbox is written by an agent, and may be a FIFO, a device or a huge file."""
    from rein.core.reading import read_small_file
    from rein.workers.driver.protocol import INBOX, MAX_ENVELOPE_BYTES, EnvelopeRefused

    if source == "-":
        binary = getattr(sys.stdin, "buffer", None)  # absent when stdin is a text stream
        raw = (binary.read(MAX_ENVELOPE_BYTES + 1) if binary is not None
               else sys.stdin.read(MAX_ENVELOPE_BYTES + 1).encode("utf-8"))
        path = Path("<stdin>")
    else:
        path = Path(source) if source else ws / INBOX
        if not path.is_absolute() and source:
            path = Path.cwd() / path
        # A plain file within the limit is read here; the loader's reader only explains
        # what is wrong with anything else.
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
    from rein.workers.driver.protocol import INBOX, MAX_ENVELOPE_BYTES, EnvelopeRefused

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


def _refused(ws: Path, exc: ReinError, run_id: str | None, as_json: bool,
             store: str | None) -> int:
    try:
        pending: dict[str, Any] | None = read_status(ws, run_id, store)
    except ReinError:
        pending = None
    problems = list(exc.fields.get("problems") or []) if hasattr(exc, "fields") else []
    # A refusal quotes the envelope it refuses: what it quotes is redacted like the store.
    problems, message, error = _redact(ws, [problems, str(exc), exc.to_json()])
    if pending is not None:
        from rein.cli.calls import note

        note(pending, status="refused")
    say = guarded(echo)
    if as_json:
        guarded(_emit_json)({"status": "refused", "error": error, "problems": problems,
                             "pending": pending, "exit_code": int(ExitCode.REFUSED)})
    else:
        say(f"REFUSED: {message}", err=True)
        for problem in problems:
            say(f"  - {problem}", err=True)
        if pending is not None:
            from rein.workers.driver.status import render

            # Named where it is: shown apart from stdout, the refusal stands on its own.
            say("nothing changed; the instruction still pending is on standard output:\n",
                err=True)
            say(render(pending))
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
