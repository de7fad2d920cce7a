"""Progress of a run on the command line: a redrawing view on a terminal, plain lines
elsewhere, JSON lines with ``--json``, nothing with ``--quiet``.

:class:`Progress` is a listener of the Harness (``rein run``, ``resume``, an answer that
continues a run, ``cancel``) and the sink of :func:`follow` (``rein runs watch``); both feed
it events of the log, which :class:`rein.cli.live_state.RunView` folds. ``rich`` is imported
only when a terminal gets the redrawing view, so ``rein next``, ``submit`` and ``--help``
never load it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self, TextIO

from rein.cli.echo import echo
from rein.cli.live_state import HISTORY_TYPES, MARKS, RunView, duration, seconds_between

# What a view starts from when it is taken up mid-run: the run to show, and its events so far.
Primer = Callable[[Any], tuple[str, Iterable[Any]]]

_STYLE = {"succeeded": "green", "failed": "red", "blocked": "red", "cancelled": "red",
          "running": "cyan", "waiting": "yellow", "awaiting_human": "yellow",
          "skipped": "dim", "pending": "dim", "not_run": "dim", "stopped": "red"}


def redraws(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that can take a redrawing view."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


class Progress:
    """Shows the events it is given; :meth:`close` (or the ``with`` block) leaves the last
    view on the screen. ``live=None`` redraws when the stream is a terminal; the default
    prints plain lines (``rein submit`` keeps to them, and so stays light), ``header``
    puts the run id before them. ``primer``, given the first event this process sees,
    returns the run to show and what it did before (:func:`history`), for a process that
    learns which run it advances only from that event (``rein submit``)."""

    def __init__(self, as_json: bool, *, quiet: bool = False,
                 limits: Mapping[str, Any] | None = None,
                 stream: TextIO | None = None, live: bool | None = False,
                 header: bool = False, primer: Primer | None = None) -> None:
        self.as_json = as_json
        self.quiet = quiet
        self.limits = dict(limits or {})
        self.stream = stream or sys.stderr
        self.live = (not as_json and not quiet and redraws(self.stream)) \
            if live is None else live
        self.header = header  # plain lines: the run id first, once
        self.primer = primer
        self.seeds: list[tuple[str, str, str]] = []  # (key, type, title): the plan's nodes
        self.view: RunView | None = None
        self._headed = False
        self._lock = threading.Lock()
        self._screen: Any = None  # the rich Live, once the run has begun
        self._final = False

    def __call__(self, event: Any) -> None:
        # Printing reports a state change, never takes part in it: a reader that went away
        # (`rein run | head -1`) must not stop the advance between two transitions.
        from rein.cli.safe_output import guarded

        guarded(self._show)(event)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _show(self, event: Any) -> None:
        if self.as_json:
            from rein.cli.output import emit_json_line

            emit_json_line(event.to_json())
            return
        if self.quiet:
            return
        if self.view is None and self.primer is not None:
            # The view starts from the run's history, this event included: folded twice,
            # an event counts once, so only what follows it is told.
            self.prime(*self.primer(event))
        if self.view is None:
            # The run this process advances: the first event's, or its parent's for an
            # answer given in a subgraph's child run.
            payload = event.payload
            top = payload.get("parent_run_id") if event.type == "run/started" else None
            self._begin(str(top or event.run_id))
        assert self.view is not None
        with self._lock:
            lines = self.view.apply(event)
        if self.live:
            if self._screen is None:
                self._start_screen()
            return
        if self.header and not self._headed:
            self._headed = True
            self._echo(f"run {self.view.run_id}"
                       + (f"  {self.view.graph_id}" if self.view.graph_id else ""))
        for line in lines:
            self._echo(line)

    def _begin(self, run_id: str) -> None:
        self.view = RunView(run_id=run_id, limits=self.limits)
        for key, type_, title in self.seeds:
            self.view.seed(key, type_, title)

    def prime(self, run_id: str, events: Iterable[Any]) -> None:
        """Fold what the run did before this process took it up (a resume, an answer that
        continues it), saying nothing: the view starts whole, and only changes are told."""
        if self.as_json or self.quiet:
            return
        self._begin(run_id)
        assert self.view is not None
        for event in events:
            self.view.apply(event)

    def _echo(self, text: str) -> None:
        from rein.cli.output import shown

        echo(shown(text), file=self.stream)

    def _start_screen(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")),
                          highlight=False)
        self._screen = Live(get_renderable=self._render, console=console,
                            refresh_per_second=4, transient=False)
        self._screen.start()

    def _render(self) -> Any:
        import datetime as dt

        now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        # While it redraws, the view fits the screen; the last one is printed whole.
        rows = None if self._final or self._screen is None else \
            self._screen.console.size.height - 8
        with self._lock:
            assert self.view is not None
            return render(self.view, now=now, max_rows=rows)

    def drew(self, wait: str) -> bool:
        """Whether the redrawn view on the screen names what the run waits for under
        ``wait`` (``approval:ID``): the outcome below it need not say it again."""
        return self.live and self.view is not None and wait in self.view.waits

    def close(self) -> None:
        """Stop redrawing; the final view stays on the screen."""
        if self._screen is not None:
            self._final = True
            screen, self._screen = self._screen, None
            screen.stop()


def render(view: RunView, *, now: str | None = None, max_rows: int | None = None) -> Any:
    """The whole view as a rich renderable (rich is imported here, never at module load).
    With ``max_rows``, nodes that ended well are folded into one line first, oldest
    first, so that what runs, waits or failed stays on a small screen."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from rein.cli.output import shown

    moment = now or view.last_at
    widths = _widths(view)
    header = Text.assemble(("run ", "bold"), (view.run_id, "bold"), f"  {view.graph_id}  ",
                           (view.status.ljust(widths[2]), _STYLE.get(view.status, "")))
    took = duration(_run_seconds(view, moment))
    if took:  # wall, as everywhere a run's or a node's time is shown
        header.append(f"  wall {took}", style="dim")
    table = Table.grid(padding=(0, 1))
    # Each column as wide as the widest value it can hold, not the widest it holds now: a
    # status that changes, an attempt that fails, a duration that grows moves nothing.
    for width in widths:
        table.add_column(min_width=width, no_wrap=True)
    table.add_column()  # what the node counts, why it waits, why an attempt failed
    nodes = view.shown_nodes()
    folded = 0
    if max_rows is not None:
        rows = len(nodes) + sum(a.failed for n in nodes for a in n.attempts)
        for node in list(nodes):
            if rows <= max(max_rows, 1):
                break
            if node.status in ("succeeded", "skipped", "not_run"):
                nodes.remove(node)
                folded += 1
                rows -= 1 + sum(a.failed for a in node.attempts)
    if folded:
        table.add_row(Text("✓", style="green"), Text(f"{folded} more ended", style="dim"),
                      "", "", "", Text("(`rein runs show` lists them)", style="dim"))
    for node in nodes:
        style = _STYLE.get(node.status, "")
        notes = [x for x in (node.counts(),
                             f"{len(node.attempts)} attempts" if len(node.attempts) > 1
                             else "") if x]
        if node.reason and node.reason != "human":  # awaiting_human says it already
            notes.append(node.reason)
        table.add_row(Text(MARKS.get(node.status, "·"), style=style), Text(node.key),
                      Text(node.status, style=style), Text(node.type, style="dim"),
                      Text(_wall(node.seconds(None if node.ended else moment))),
                      Text(" ".join(f"({n})" for n in notes)))
        for attempt in node.attempts:
            if attempt.failed:
                took = _wall(seconds_between(attempt.started_at, attempt.finished_at))
                table.add_row("", Text(f"  attempt {attempt.number}", style="red"),
                              Text(str(attempt.result), style="red"), "", Text(took),
                              Text(shown(attempt.reason), style="dim"))
    parts: list[Any] = [header, table,
                        Text("budget  " + " · ".join(view.budget()), style="dim")]
    if view.cancelled_by or view.cancel_note:
        parts.append(Text(f"cancelled by {view.cancelled_by or 'an operator'}"
                          + (f": {view.cancel_note}" if view.cancel_note else ""),
                          style="red"))
    for wait in view.waits.values():
        parts.append(Text.assemble(("waiting for ", "yellow"), shown(wait)))
    for notice in view.notices[-3:]:
        parts.append(Text(f"! {shown(notice)}", style="yellow"))
    return Group(*parts)


def _widths(view: RunView) -> tuple[int, int, int, int, int]:
    """The widths of the mark, node, status, type and duration columns: the longest key of
    every node the view knows (the plan's are seeded before the run begins), every status
    and attempt result there is, every node type, the longest duration (``wall 59m59s``)."""
    from rein.core.states import AttemptStatus

    keys = [len(n.key) for n in view.nodes.values()] + [len("  attempt 10")]
    states = [*MARKS, *(s.value for s in AttemptStatus), "interrupted"]
    return 1, max(keys), max(map(len, states)), len("decision"), len("wall 59m59s")


def _wall(seconds: float | None) -> str:
    took = duration(seconds)
    return f"wall {took}" if took else ""


def _run_seconds(view: RunView, now: str | None) -> float | None:
    return seconds_between(view.started_at, view.finished_at or now)


async def follow(harness: Any, run_id: str, progress: Progress, *, interval: float,
                 timeout: float | None) -> str:
    """Feed ``progress`` the events of ``run_id`` and its child runs, stored ones first, then
    new ones as any process commits them, until the run ends or pauses, or ``timeout``
    seconds pass, or the run is found ``running`` with no process advancing it (it was
    interrupted) on three looks in a row. The run's status when it returns.

    The run's log is followed through the Harness (:meth:`Harness.subscribe`, one read per
    change); its status and its child runs are read again only when the follower of the
    log saw a change. Every ``interval`` seconds the run's lock is looked at: a process
    that died commits nothing."""
    import asyncio

    after: dict[str, int] = {}
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    orphaned = 0
    seen: int | None = None
    status: Any = None
    while True:
        if seen != harness.changes_seen:
            seen = harness.changes_seen
            # The status before the events: every event of a run that had stopped is stored.
            status = harness.run(run_id).status
            for member in [run_id, *_children(harness, run_id)]:
                async for event in harness.subscribe(member, after.get(member, 0)):
                    after[member] = event.seq
                    progress(event)
            if status.value != "running":
                return str(status.value)
        # Three looks, not one: a run is created a moment before its lock is taken.
        orphaned = 0 if harness.advancing(run_id) else orphaned + 1
        if orphaned >= 3:
            return str(harness.run(run_id).status.value)
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return str(status.value)
        # Woken at once by a commit in this process, at the store's change number otherwise.
        wait = interval if left is None else min(interval, left)
        async for event in harness.subscribe(run_id, after.get(run_id, 0), follow=True,
                                             interval=interval, timeout=wait):
            after[run_id] = event.seq
            progress(event)


def stored_events(harness: Any, run_id: str, *,
                  types: Iterable[str] | None = None) -> list[Any]:
    """The stored events of ``run_id`` and of its child runs (parents first), for
    :meth:`Progress.prime` (only of ``types`` when given)."""
    only = None if types is None else sorted(types)
    return [e for member in [run_id, *_children(harness, run_id)]
            for e in harness.events(member, types=only)]


def history(harness: Any, event: Any) -> tuple[str, list[Any]]:
    """The top-level run of ``event`` and the events that shape its plain lines (not the
    items, the bulk of a log: the spend they carry is not in a line), for a
    :class:`Progress` ``primer``."""
    run_id = harness.top_run_id(str(event.run_id))
    return run_id, stored_events(harness, run_id, types=HISTORY_TYPES)


def _children(harness: Any, run_id: str) -> list[str]:
    out, todo = [], [run_id]
    while todo:
        for child in harness.child_runs(todo.pop()):
            out.append(child.run_id)
            todo.append(child.run_id)
    return out


__all__ = ["Primer", "Progress", "follow", "history", "redraws", "render", "stored_events"]
