"""``rein worker``: take node attempts from the PostgreSQL queues a run with the DBOS executor
fills, on this machine, until stopped."""

from __future__ import annotations

import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import click

from rein.cli.run import open_harness, resolve_workspace, workspace_option


@click.command("worker")
@workspace_option
@click.option("--queue", default=None, metavar="NAME",
              help="Queue to take attempts from (default: [executor] queue, else rein).")
@click.option("--name", default=None, metavar="ID",
              help="This worker's name in records and heartbeats (default: HOST-PID).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Attempts this machine runs at once (default: [executor] "
                   "worker_concurrency, else 4).")
@click.option("--new-key", is_flag=True,
              help="Write a new queue key file where this machine looks for it (mode 0600; "
                   "kept if one is there), print its path and id, and exit.")
def worker(workspace: Path | None, queue: str | None, name: str | None,
           concurrency: int | None, new_key: bool) -> None:
    """Take node attempts from the queues of a PostgreSQL store until stopped.

    Start one or more on each machine, each with the shared workspace (same path, same git
    HEAD) of the runs it serves; runs started with `--executor dbos` (or `[executor] kind =
    "dbos"`, REIN_EXECUTOR=dbos) put their attempts on the queue and these processes run
    them, and the command criteria of those attempts. A worker that stops beating (killed,
    machine lost) has its attempts resumed by another. Give every worker the same
    rein.toml: its [executor] settings (concurrency, rate_limits) are the queues'.

    Every coordinator and worker holds the same queue key, a file outside the database
    (~/.config/rein/queue.key, REIN_QUEUE_KEY_FILE, or [executor] key_file in the user
    rein.toml): jobs and answers are signed with it, and a worker runs only jobs that
    verify and belong to a run a person approved. `--new-key` writes one; copy that file
    to every machine.

    \b
    Example:
      rein worker --new-key
      rein worker --store postgresql://rein@db/rein --workspace /srv/checkout

    Exit codes: 0 stopped (SIGTERM or Ctrl-C), 1 the store or its queues are not
    reachable, 64 usage error (no PostgreSQL store, no usable queue key, the scale extra
    not installed).
    """
    ws = resolve_workspace(workspace)
    harness = open_harness(ws)
    if new_key:
        path, key_id, written = harness.new_queue_key()
        click.echo(f"{'wrote' if written else 'kept'} queue key {key_id} at {path}; copy this "
                   "file (mode 0600) to every machine that runs a coordinator or a worker")
        return
    stop = threading.Event()

    def stopping(_sig: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    harness.serve_attempts(queue=queue, name=name or f"{socket.gethostname()}-{os.getpid()}",
                           stop=stop, concurrency=concurrency,
                           say=lambda text: click.echo(f"rein worker: {text}", err=True))
