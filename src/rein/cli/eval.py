"""``rein eval``: one scenario suite under several harness configurations, and which is
better. Parses, calls :mod:`rein.eval.evaluate`, prints."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option


@click.command("eval")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--config", "names", multiple=True, metavar="NAME",
              help="A configuration to run (repeat it; built in: oracle, nop). The first "
                   "declared one is the baseline the others are compared with.")
@click.option("--trials", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Trials per scenario and configuration.")
@click.option("--lanes", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Trials run at once (threads; each trial has its own workspace).")
@click.option("--configs", "configs_file", type=click.Path(path_type=Path, exists=True,
                                                           dir_okay=False),
              help="The configurations file (default: eval.toml beside the suite).")
@click.option("--host", is_flag=True, help="This host satisfies the tasks' container images: "
              "run Harbor tasks here instead of reporting them unsupported.")
@click.option("--timeout", type=click.FloatRange(1, None), default=900, show_default=True,
              help="Seconds one trial may take; past it, the trial fails.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Significance level of the comparisons.")
@click.option("--baseline", metavar="RESULT", help="A result.json (or a finished evaluation's "
              "id) to compare with: exit 1 on a significant regression or any scenario "
              "newly broken.")
@click.option("--approve", "approve", metavar="DIGEST", help="Approve what the "
              "configurations run (hooks, command workers, providers of the suite's "
              "choosing): the digest rein printed when it refused. Recorded: the same "
              "content needs no approval again.")
@click.option("--resume", "resume_id", metavar="ID", help="Continue an evaluation left "
              "unfinished (killed, or stopped with Ctrl-C): finished trials are kept, none "
              "runs twice; it runs as planned.")
@click.option("--show", "show_id", metavar="ID", help="Print a finished evaluation's "
              "results (no trial runs).")
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write a self-contained HTML report with a chart.")
@click.option("--atif", "atif_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Also export every trial's trajectory as ATIF "
                   "(DIR/<trial>/agent/trajectory.json) for Harbor's tools.")
@click.option("--executor", type=click.Choice(["inprocess", "dbos"]), default="inprocess",
              show_default=True, help="Where the trials run: in this process's lanes, or "
              "on DBOS lanes served by `rein eval --serve` processes (the scale extra).")
@click.option("--store", "store_url", metavar="URL", help="The PostgreSQL database of the "
              "DBOS lanes' queues (default: [store] url).")
@click.option("--serve", is_flag=True, help="Serve DBOS lanes: run the trials evaluations "
              "started with --executor dbos put on the queue, until stopped (--lanes at "
              "once).")
@click.option("--name", "worker_name", metavar="ID", help="With --serve: this worker's name "
              "(default: HOST-PID); a worker restarted under its name recovers its trials.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@click.option("--workspace", type=click.Path(path_type=Path, file_okay=False),
              help="Where evaluations are kept (.rein/evals/); default: the current folder.")
@json_option
def eval_(paths: tuple[Path, ...], names: tuple[str, ...], trials: int, lanes: int,
          configs_file: Path | None, host: bool, timeout: float, alpha: float,
          baseline: str | None, approve: str | None, resume_id: str | None,
          show_id: str | None, html_file: Path | None, atif_dir: Path | None,
          executor: str, store_url: str | None, serve: bool, worker_name: str | None,
          quiet: bool, workspace: Path | None, as_json: bool) -> int:
    """Run a scenario suite under several harness configurations and say which is better.

    A PATH is a scenario (a folder with scenario.toml, or a Harbor task with task.toml) or
    a folder of scenarios. Each configuration is an overlay on your rein.toml, declared in
    eval.toml beside the suite; oracle (runs each reference solution, must solve all) and
    nop (does nothing, must solve none) are built in and validate the suite.

    A configuration whose hooks, command workers or providers run code or reach services
    of the suite's choosing runs nothing until you approve it: rein shows what it runs and
    asks on a terminal, or refuses (exit 4) with the digest to pass to --approve.

    \b
    Example:
      rein eval examples/eval --config oracle --config nop
      rein eval examples/eval --config scripted --config scripted-no-shell --trials 3
      rein eval examples/eval --config scripted --json > result.json
      rein eval examples/eval --config scripted --baseline result.json   # gate a change
      rein eval examples/eval --config scripted-no-shell --approve sha256:...
      rein eval --resume eval-20261207T101500-a1b2c3
      rein eval --serve --store postgresql://rein@db/rein --lanes 4   # a DBOS lane worker
      rein eval examples/eval --config oracle --executor dbos --store postgresql://...
    \b
    Exit codes: 0 done, 1 the suite is invalid (oracle missed a scenario, nop solved one)
    or the baseline gate failed, 4 refused (not approved, or the evaluation runs
    elsewhere), 64 usage error (a DBOS lane without a PostgreSQL URL, the scale extra or a
    queue key).
    """
    from rein.errors import ConfigError

    root = (workspace or Path.cwd()).resolve()
    if serve:
        return _serve(root, store_url=store_url, lanes=lanes, name=worker_name, quiet=quiet)
    modes = sum(x is not None for x in (resume_id, show_id)) + bool(paths)
    if modes != 1:
        raise ConfigError("give PATHs to evaluate, or --resume ID, or --show ID (one of them)",
                          code="EVAL012", hint="rein eval examples/eval --config oracle")
    if paths and not names:
        raise ConfigError("name the configurations to run with --config", code="EVAL012",
                          hint="for example --config oracle --config nop")
    _refuse_unused(click.get_current_context(), resume=resume_id, show=show_id)
    if html_file is not None and not html_file.resolve().parent.is_dir():
        # Checked before the trials run: the report is written once they all have.
        raise ConfigError(f"--html {html_file}: the folder {html_file.resolve().parent} does "
                          "not exist", code="EVAL012", hint="create it, or name a file in "
                                                            "an existing folder")
    if show_id is not None:
        from rein.eval.evaluate import finished_result

        result = finished_result(root, show_id)
        if baseline is not None:
            from rein.eval.baseline import against_baseline
            from rein.eval.evaluate import read_result

            result["baseline"] = against_baseline(result, read_result(root, baseline),
                                                  alpha=float(result["alpha"]))
    else:
        result = _run(root, paths, names, trials=trials, lanes=lanes,
                      configs_file=configs_file, host=host, timeout=timeout, alpha=alpha,
                      baseline=baseline, resume_id=resume_id, quiet=quiet, approve=approve,
                      interactive=not as_json and _interactive(), executor=executor,
                      store_url=store_url)
    return _show(result, as_json=as_json, html_file=html_file, atif_dir=atif_dir)


def _run(root: Path, paths: tuple[Path, ...], names: tuple[str, ...], *, trials: int,
         lanes: int, configs_file: Path | None, host: bool, timeout: float, alpha: float,
         baseline: str | None, resume_id: str | None, quiet: bool, approve: str | None,
         interactive: bool, executor: str, store_url: str | None) -> dict[str, Any]:
    import os

    from rein.config import load_config
    from rein.eval.evaluate import evaluate, read_result
    from rein.eval.runner import Options

    base = load_config(root)
    against = read_result(root, baseline) if baseline is not None else None

    def say(text: str) -> None:
        if not quiet:
            click.echo(text, err=True)

    with _term_as_interrupt():
        return evaluate(root, list(paths), list(names), configs_file=configs_file,
                        options=Options(trials=trials, lanes=lanes, host=host,
                                        timeout=timeout, alpha=alpha, executor=executor),
                        base=base, env=dict(os.environ), say=say, resume_id=resume_id,
                        baseline=against, approve=approve,
                        ask=_ask if interactive else None, store_url=store_url)


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM (`timeout`, the end of a CI job, `kill`) stops an evaluation as Ctrl-C does:
    the running trials stopped and journaled as stopped, for a resume to run again, where a
    kill would count against each of them (twice, and it is reported, not run again)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


# What an evaluation's plan fixes once it is written: a resume runs it as planned.
_PLANNED = ("names", "trials", "lanes", "configs_file", "host", "timeout", "alpha",
            "executor")
# --show prints a finished evaluation (against a --baseline, if given): nothing runs.
_RUNNING = (*_PLANNED, "approve", "store_url")


def _refuse_unused(ctx: click.Context, *, resume: str | None, show: str | None) -> None:
    """Refuse an option given on the command line that the mode would ignore (EVAL012):
    ``--trials 5`` with ``--resume`` would otherwise resume as planned, silently."""
    from click.core import ParameterSource

    from rein.errors import ConfigError

    unused: tuple[str, ...]
    given = {p.name: p for p in ctx.command.params
             if p.name and ctx.get_parameter_source(p.name) in (ParameterSource.COMMANDLINE,
                                                                ParameterSource.ENVIRONMENT)}
    if "worker_name" in given:
        raise ConfigError("--name names a worker of --serve", code="EVAL012",
                          hint="leave out --name, or serve DBOS lanes with --serve")
    if resume is not None:
        mode, unused = "--resume", _PLANNED
        why = "an evaluation resumes as it was planned when it began"
        fix = "start a new evaluation with PATHs and the options you want"
    elif show is not None:
        mode, unused = "--show", _RUNNING
        why = "--show prints a finished evaluation and runs nothing"
        fix = "compare it with another result through --baseline"
    else:
        return
    for name in unused:
        if name in given:
            flag = given[name].opts[0]
            raise ConfigError(f"{flag} does not go with {mode}: {why}", code="EVAL012",
                              hint=f"leave out {flag}, or {fix}")


def _serve(root: Path, *, store_url: str | None, lanes: int, name: str | None,
           quiet: bool) -> int:
    """Serve DBOS lanes until SIGTERM or Ctrl-C."""
    import os
    import signal
    import socket
    import threading

    from rein.eval.evaluate import serve_lanes

    stop = threading.Event()

    def stopping(_sig: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    serve_lanes(root, store_url=store_url, lanes=lanes,
                name=name or f"{socket.gethostname()}-{os.getpid()}", env=dict(os.environ),
                stop=stop, say=lambda text: None if quiet else click.echo(f"rein eval: {text}",
                                                                         err=True))
    return 0


def _ask(found: Any) -> bool:
    """Show what the configurations run and ask the person at the terminal."""
    from rein.cli.prompt import approved

    for line in found.describe():
        click.echo(line, err=True)
    return approved("Approve these and run the evaluation?", err=True)


def _interactive() -> bool:
    import sys

    return sys.stdin.isatty() and sys.stderr.isatty()


def _show(result: dict[str, Any], *, as_json: bool, html_file: Path | None,
          atif_dir: Path | None) -> int:
    from rein.eval.evaluate import failed

    if html_file is not None:
        from rein.eval.report_html import html_report

        html_file.write_text(html_report(result), encoding="utf-8")
    if atif_dir is not None:
        from rein.eval.export import export_atif

        exported = export_atif(result, atif_dir)
        if not as_json:
            click.echo(f"exported {exported} trajectory file(s) to {atif_dir}", err=True)
    if as_json:
        emit_json(result)
    else:
        from rein.eval.render import render

        click.echo(render(result), nl=False)
        if html_file is not None:
            click.echo(f"report: {html_file}")
    return 1 if failed(result) else 0
