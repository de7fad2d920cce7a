"""``rein runs prune``: remove old runs from the store so that ``.rein/`` stays small.

The Harness decides what may go (:meth:`rein.engine.service.Harness.prune`: whole run
families, never what a run that has not ended needs); this module parses the filters and
says what was removed and what was kept, and why.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, json_option
from rein.cli.run_pick import reads
from rein.cli.sync import run_sync
from rein.cli.workspace import workspace_option
from rein.errors import ExitCode, ReinError

_ENDED = ("succeeded", "failed", "partial", "cancelled")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> dt.timedelta:
    """``7d``, ``12h``, ``30m``, ``2w``, ``90s`` as a duration; ValueError otherwise."""
    value = text.strip().lower()
    if len(value) < 2 or value[-1] not in _UNITS or not value[:-1].isdigit():
        raise ValueError(f"{text!r} is not an age such as 7d, 12h, 30m or 2w")
    return dt.timedelta(seconds=int(value[:-1]) * _UNITS[value[-1]])


def _age(_ctx: Any, _param: Any, value: str | None) -> dt.timedelta | None:
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("prune")
@click.option("--older-than", "older_than", metavar="AGE", default=None, callback=_age,
              help="Only runs that ended (or started, if they never ended) longer ago than "
                   "AGE: 90s, 30m, 12h, 7d, 2w.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(_ENDED),
              help="Only runs that ended with this status (repeatable).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@workspace_option
@json_option
def prune_runs(older_than: dt.timedelta | None, statuses: tuple[str, ...], dry_run: bool,
               workspace: Path | None, as_json: bool) -> int:
    """Remove old runs (each with its subgraph child runs) from the store.

    A run goes when it matches every filter given (at least one is needed). What a run
    that has not ended needs is kept whatever the filters say: a waiting or running run,
    one another rein process holds, the run a waiting run restarted from. Events, node
    records, approvals and driver turns go with their run.

    \b
    Example:
      rein runs prune --older-than 7d --dry-run
      rein runs prune --status failed --status cancelled
      rein runs prune --older-than 30d --json

    \b
    Exit codes: 0 ok (also when nothing matched), 64 usage error (no filter given).
    """
    if older_than is None and not statuses:
        raise click.UsageError("name what to remove: --older-than AGE and/or --status STATUS "
                               "(add --dry-run to look first)")
    with reads(workspace) as harness:
        try:
            rows = run_sync(harness.prune(older_than=older_than, statuses=statuses,
                                          dry_run=dry_run))
        except ReinError as exc:
            if exc.code != "STORE404":
                raise
            rows = []  # no store yet: nothing to remove
    removed = [r for r in rows if r.kept is None]
    kept = [r for r in rows if r.kept is not None]
    if as_json:
        emit_json({"dry_run": dry_run,
                   "removed": [_json(r) for r in removed],
                   "kept": [{**_json(r), "reason": r.kept} for r in kept]})
        return int(ExitCode.OK)
    verb = "would remove" if dry_run else "removed"
    for r in removed:
        children = f" and {r.children} child run(s)" if r.children else ""
        click.echo(f"{verb} {r.run_id}  {r.status:<10} {r.started_at}{children}")
    for r in kept:
        click.echo(f"kept    {r.run_id}  {r.status:<10} {r.started_at}  ({r.kept})")
    runs = sum(1 + r.children for r in removed)
    click.echo(f"{verb} {len(removed)} run(s) ({runs} with their child runs), kept "
               f"{len(kept)} that matched" if rows else "no run matched")
    return int(ExitCode.OK)


def _json(r: Any) -> dict[str, Any]:
    return {"run_id": r.run_id, "status": r.status, "started_at": r.started_at,
            "finished_at": r.finished_at, "child_runs": r.children}


__all__ = ["parse_age", "prune_runs"]
