"""``rein runs watch [RUN]``: the live view of ``rein run``, attached from another shell.

It replays the run's events from the store and follows new ones as whichever process
advances the run commits them (:func:`rein.cli.live.follow`), so what it shows is what the
run's own terminal shows. It stops when the run stops or pauses, with the exit code
``rein run`` would have given: 0 succeeded, 1 failed or cancelled, 3 waiting.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rein.cli.live import Progress, follow
from rein.cli.output import json_option
from rein.cli.run import render_outcome
from rein.cli.run_pick import pick_run, reads
from rein.cli.sync import run_sync
from rein.cli.workspace import workspace_option
from rein.engine.run.outcome import RunOutcome


@click.command("watch")
@click.argument("run_id", required=False)
@click.option("--interval", type=click.FloatRange(min=0.01), default=0.2, show_default=True,
              help="Seconds between looks at the store for another process's progress.")
@click.option("--timeout", type=click.FloatRange(min=0), default=None,
              help="Stop after this many seconds (exit 3 if the run is still going).")
@workspace_option
@json_option
def watch_run(run_id: str | None, interval: float, timeout: float | None,
              workspace: Path | None, as_json: bool) -> int:
    """Watch a run (the newest without RUN_ID) as it advances, from any shell.

    Shows what `rein run` shows on its terminal: every node with its attempts (failed ones
    with their reason), durations, loop iterations and map items, the budget spent against
    the graph's limits, and what the run waits for (an approval with its id, the driver's
    answer, a worker). A terminal gets a redrawing view, a pipe one line per change, --json
    one JSON line per event and then {"run_id", "status", "digest"}. Ends when the run
    ends or pauses, or when no rein process advances it any more (it was interrupted:
    `rein resume` continues it).

    \b
    Example:
      rein runs watch
      rein runs watch run-20260101T120000-3f9a1c --timeout 600

    \b
    Exit codes: 0 the run succeeded, 1 it failed or was cancelled, 3 it waits (for a
    person, the driver or a worker), was interrupted, or --timeout passed, 64 usage error.
    """
    with reads(workspace) as harness:
        run = pick_run(harness, run_id)
        progress = Progress(as_json, limits=harness.limits(run.run_id), stream=sys.stdout,
                            live=None, header=True)
        progress.seeds = harness.top_nodes(run.run_id)
        with progress:
            run_sync(follow(harness, run.run_id, progress, interval=interval,
                            timeout=timeout))
        run = harness.run(run.run_id)
        stopped = RunOutcome(run_id=run.run_id, status=run.status, digest=run.graph_digest)
        code = render_outcome(stopped, as_json, harness, progress)
        if run.status.value == "running" and not as_json and not harness.advancing(run.run_id):
            click.echo(f"  no rein process is advancing it (it was interrupted): "
                       f"`rein resume {run.run_id}` continues it")
        return code


__all__ = ["watch_run"]
