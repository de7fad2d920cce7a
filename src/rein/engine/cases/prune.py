"""Removing old runs from the store, so that ``.rein/`` does not grow without bound.

A run goes with its whole family (its subgraph child runs, and theirs) or not at all. What
a run that has not ended still needs is never removed: a run that waits (for a person, a
driver or a worker), one found running, and a run another process holds the lock of are
kept whatever the filters say, and so is the run a kept run restarted from
(``policy.resume: restart``), and every run that is a turn of a thread (the thread's
history is its turns' events: ``rein.engine.cases.sessions``). The filters narrow, never widen: a run goes only when it is
older than ``older_than`` *and* (when statuses are given) has one of them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from pathlib import Path

from rein.core.frozen import Frozen
from rein.errors import Refused
from rein.store.base import RunRow, Store
from rein.store.lineage import family

_RESTART_KEY = "x-rein-restart-of"  # in a restarted run's binding: the run it replaced


class Pruned(Frozen):
    """One top-level run and what happened to it (or would, in a dry run)."""

    run_id: str
    status: str
    started_at: str
    finished_at: str | None
    children: int  # child runs removed (or kept) with it
    kept: str | None = None  # why it stays; ``None``: removed


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _selected(run: RunRow, cutoff: dt.datetime | None,
              statuses: Collection[str]) -> bool:
    if statuses and run.status.value not in statuses:
        return False
    if cutoff is None:
        return True
    ended = _when(run.finished_at) or _when(run.started_at)
    return ended is not None and ended < cutoff


def prune(store: Store, *, now: dt.datetime, older_than: dt.timedelta | None,
          statuses: Collection[str], dry_run: bool, workspace: Path | None = None
          ) -> list[Pruned]:
    """Remove (or, with ``dry_run``, only list) the top-level runs the filters select, each
    with its child runs; every selected run is listed, those kept with the reason. With
    ``workspace``, the hook transcripts its runs' sessions left there go with them."""
    cutoff = None if older_than is None else now - older_than
    tops = store.list_runs()
    needed = {str(r.binding.get(_RESTART_KEY)) for r in tops
              if not r.status.terminal and r.binding.get(_RESTART_KEY)}
    turns = {t.run_id for thread in store.list_threads()
             for t in store.thread_turns(thread.thread_id) if t.run_id}
    out: list[Pruned] = []
    for run in reversed(tops):  # oldest first
        if not _selected(run, cutoff, statuses):
            continue
        members = family(store, run.run_id)
        reason = ("a thread's turn: its history" if run.run_id in turns
                  else _kept(store, run, members, needed))
        entry = Pruned(run_id=run.run_id, status=run.status.value, started_at=run.started_at,
                       finished_at=run.finished_at, children=len(members) - 1, kept=reason)
        if reason is None and not dry_run:
            try:
                with store.lock_run(run.run_id):  # nobody advances it while it goes
                    store.delete_runs([m.run_id for m in members])
                if workspace is not None:
                    _remove_files(workspace, members)
            except Refused as exc:  # a lock taken since the check: keep it, say why
                if exc.code != "RUN_LOCKED":
                    raise
                entry = entry.replace(kept="another rein process holds it")
        out.append(entry)
    return out


def _remove_files(workspace: Path, members: list[RunRow]) -> None:
    """What the runs left in the workspace's ``.rein/``: their sessions' transcripts."""
    import shutil

    from rein.workers.hook_transcript import transcript_folder

    for member in members:
        shutil.rmtree(transcript_folder(workspace, member.run_id), ignore_errors=True)


def _kept(store: Store, run: RunRow, members: list[RunRow], needed: set[str]) -> str | None:
    """Why a selected run must stay, or ``None`` when it may go."""
    unfinished = [m for m in members if not m.status.terminal]
    if unfinished:
        first = unfinished[0]
        return f"it has not ended ({first.status.value}" + \
            (f" in child run {first.run_id})" if first.run_id != run.run_id else ")")
    if run.run_id in needed:
        return "a run that has not ended restarted from it"
    if any(store.run_locked(m.run_id) for m in members):
        return "another rein process holds it"
    return None


__all__ = ["Pruned", "prune"]
