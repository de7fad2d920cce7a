"""The command line: ``main(argv) -> int`` so that tests need no subprocess."""

from __future__ import annotations

import sys

# Not `typing.TYPE_CHECKING`: a driver turn's plain forms import little more than this
# module, and `typing` would cost them more than the rest; mypy reads a constant of this
# name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn

    import click


def main(argv: Sequence[str] | None = None) -> int:
    """Run one rein command and return its exit code. Bad input never shows a traceback.

    Each driver-facing command (``next``, ``submit``, ``dev`` and ``spec`` but their
    reports) is put on the workspace's record of calls once it has run
    (:mod:`rein.cli.calls`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if (output := sys.modules.get("rein.cli.output")) is not None:
        output.read_environment_anew()  # not imported yet: nothing read to forget
    if not args or args[0] not in ("next", "submit", "dev", "spec") or \
            (args[0] in ("dev", "spec") and args[1:2] == ["report"]):
        return _main(args)  # not a driver-facing call: nothing to record, nothing imported
    import time

    from rein.cli.calls import record_call, start

    started = time.time()
    start()
    code = 1
    try:
        if args[0] == "submit":
            from rein.core.collector import starting

            # No pass of the collector over what the turn's start imports and reads, until
            # the run advances (rein.core.collector): 6.5 ms of a cold submit otherwise.
            with starting():
                code = _main(args)
        else:
            code = _main(args)
    finally:
        record_call(args, code, started)
    return code


def _main(args: list[str]) -> int:
    if args[:1] == ["next"]:  # a driver's every turn: its plain forms skip click's import
        from rein.cli.quick.next import quick_next

        if (quick := _quick(quick_next, args[1:])) is not None:
            return quick
    if args[:1] == ["submit"]:  # a driver's every other turn: its plain forms skip click too
        from rein.cli.quick.submit import quick_submit
        from rein.errors import ReinError

        try:
            quick = quick_submit(args[1:])
        except (ReinError, KeyboardInterrupt, BrokenPipeError, OSError) as exc:
            return _failed(exc, args)
        if quick is not None:
            return quick
    if args[:1] == ["dev"]:  # the development flow's every turn: a read, mostly
        from rein.cli.quick.dev import quick_dev

        if (quick := _quick(quick_dev, args[1:])) is not None:
            return quick
    if args[:2] == ["graph", "validate"]:  # run on every save: its plain forms skip click
        from rein.cli.quick.validate import quick_validate

        quick = quick_validate(args[2:])
        if quick is not None:
            return quick
    import click

    from rein.cli.app import cli
    from rein.errors import ExitCode, ReinError

    try:
        result = cli.main(args=args, prog_name="rein", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return int(ExitCode.OK)
    except click.exceptions.UsageError as exc:
        _note_code("USAGE")
        exc, suggestion = _with_suggestion(exc)
        exc.show()
        _usage_json(exc, args, suggestion)
        return int(ExitCode.USAGE)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click's wording of Ctrl-C
            return _failed(exc.__cause__, args)
        click.echo("aborted", err=True)
        return int(ExitCode.FAILURE)
    except click.exceptions.ClickException as exc:
        _note_code("USAGE")
        exc.show()
        _usage_json(exc, args)
        return int(ExitCode.USAGE)
    except (ReinError, KeyboardInterrupt, BrokenPipeError, OSError) as exc:
        return _failed(exc, args)
    if isinstance(result, int):
        return result
    return int(ExitCode.OK)


def _note_code(code: str) -> None:
    """Put a refusal's code on this call's record (rein.cli.calls), without importing the
    record for a command that keeps none."""
    calls = sys.modules.get("rein.cli.calls")
    if calls is not None:
        calls.note(code=code)


def _quick(answer: Callable[[Sequence[str]], int | None], args: Sequence[str]) -> int | None:
    """A read's quick path (``None``: leave it to click), interrupted as click would be."""
    try:
        return answer(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _failed(exc: BaseException, args: Sequence[str]) -> int:
    """The exit code of a command that raised ``exc``, reported as the user asked for it."""
    from rein.cli.echo import echo
    from rein.errors import ExitCode, ReinError

    if isinstance(exc, KeyboardInterrupt):
        echo("interrupted", err=True)
        return 130
    if isinstance(exc, BrokenPipeError):
        return int(ExitCode.OK)
    from rein.cli.output import report_error

    if isinstance(exc, ReinError):
        _note_code(exc.code)
        report_error(exc, args)
        return int(exc.exit_code)
    assert isinstance(exc, OSError)
    # The file system refused (a workspace that is read-only, full or gone): an error with
    # a code and a hint, never a traceback.
    import errno

    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # not a path problem: say so
        _note_code("DISK_FULL")
        report_error(ReinError(f"{where}{exc.strerror}", code="DISK_FULL",
                               hint="free some space on the disk and run the command "
                                    "again"), args)
        return int(ExitCode.FAILURE)
    _note_code("OS_ERROR")
    report_error(ReinError(f"{where}{exc.strerror or exc}", code="OS_ERROR",
                           hint="check that the path exists and that rein may read and "
                                "write it (choose another with --workspace DIR)"), args)
    return int(ExitCode.FAILURE)


def _with_suggestion(
        exc: click.exceptions.UsageError) -> tuple[click.exceptions.UsageError, str | None]:
    """An unknown command or option with the nearest real one named, the same way for every
    group and command (click alone cannot see the lazily loaded top-level commands)."""
    import click

    ctx = exc.ctx
    if ctx is None:
        return exc, None
    if isinstance(exc, click.exceptions.NoSuchCommand) and isinstance(ctx.command, click.Group):
        word, names = exc.command_name, ctx.command.list_commands(ctx)
    elif isinstance(exc, click.exceptions.NoSuchOption):
        word = exc.option_name
        names = [o for p in ctx.command.get_params(ctx) for o in (*p.opts, *p.secondary_opts)
                 if o.startswith("-")]
    else:
        return exc, None
    from rein.core.suggest import did_you_mean

    suggestion = did_you_mean(word, names)
    if suggestion is None:
        return exc, None
    told = f"{exc.message} {suggestion[0].upper()}{suggestion[1:]}"
    return click.exceptions.UsageError(told, ctx), suggestion


def _usage_json(exc: Exception, args: Sequence[str], suggestion: str | None = None) -> None:
    """With --json, a usage error is also one JSON object on stdout (the text went to stderr),
    so that a script reading stdout never gets nothing back."""
    if "--json" not in args:
        return
    import click

    from rein.cli.output import emit_json

    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "rein"
    message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
    hint = f"see `{command} --help`"
    emit_json({"error": {"code": "USAGE", "message": message,
                         "hint": f"{suggestion} ({hint})" if suggestion else hint}})


def run() -> None:  # console-script entry point
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`rein ... | head`): not an error, and no traceback at exit.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    leave(code)


def leave(code: int) -> NoReturn:
    """End the process with ``code`` as Python's own exit would, less the teardown.

    Python's exit waits for the threads, runs the ``atexit`` callbacks, flushes standard
    output and error, and then frees every module and object one by one: 18 ms of a cold
    ``rein submit`` (a sixth of its own time), more after a large run. rein keeps nothing
    that needs the last part: every write is committed before the command returns (a kill
    at any point resumes to the same record) and every file is closed where it is written.
    So with no other thread alive, the callbacks run and the streams are flushed here, and
    the process ends at once (``os._exit``). A thread still running (a server's), a tracer
    or a profiler (a debugger, coverage, ``python -m cProfile``, whose report is written
    after the program returns) leave it to Python: ``SystemExit``."""
    threading = sys.modules.get("threading")  # not imported: no thread was started
    if ((threading is not None and threading.active_count() > 1)
            or sys.gettrace() is not None or sys.getprofile() is not None):
        raise SystemExit(code)
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:  # as Python's exit: not flushed, no error
            continue
        try:
            stream.flush()
        except OSError:
            if stream is sys.stdout:  # as Python's exit: output not written fails it
                code = 120
    os._exit(code)
