"""``rein runs list|show|events|record|trace``: read the store, change nothing
(``cancel`` asks a run to stop)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json, emit_json_line, json_option
from rein.cli.record_view import show_record_file
from rein.cli.run_pick import pick_run as _run
from rein.cli.run_pick import reads as _reads
from rein.cli.run_report import print_report
from rein.cli.sync import run_sync
from rein.cli.usage_report import report_options
from rein.cli.workspace import open_harness, resolve_workspace, workspace_option
from rein.core.states import NodeStatus
from rein.errors import ExitCode, ReinError


@click.group("runs")
def runs() -> None:
    """Inspect runs: list, show, report, cancel, watch, events, record, trace, prune.

    Without a RUN, show, watch, events and record take the newest run of the workspace.

    \b
    Example:
      rein runs list
      rein runs show
      rein runs watch run-20260101T120000-3f9a1c
      rein runs record run-20260101T120000-3f9a1c > record.json

    \b
    Exit codes: 0 ok, 1 no such run, 64 usage error.
    """


@runs.command("list")
@click.option("--all", "include_children", is_flag=True, help="Include subgraph child runs.")
@workspace_option
@json_option
def list_runs(include_children: bool, workspace: Path | None, as_json: bool) -> int:
    """Runs in the store, newest first (top-level runs unless --all), with the workspace
    each belongs to: a store may be shared by several workspaces and machines, and a run
    of another workspace is marked as such.

    \b
    Example:
      rein runs list --json

    \b
    Exit codes: 0 ok, 64 usage error.
    """
    with _reads(workspace) as harness:
        try:
            rows = harness.runs(include_children=include_children)
            here = {r.run_id for r in harness.runs_here()}
        except ReinError as exc:
            if exc.code != "STORE404":
                raise
            rows, here = [], set()  # no store yet: no runs
    if as_json:
        emit_json({"runs": [{"run_id": r.run_id, "graph_id": r.graph_id,
                             "status": r.status.value, "parent_run_id": r.parent_run_id,
                             "started_at": r.started_at,
                             "workspace": None if r.workspace is None else r.workspace.to_json(),
                             "this_workspace": r.run_id in here} for r in rows]})
    elif not rows:
        click.echo("no runs")
    else:
        for r in rows:
            parent = f"  (child of {r.parent_run_id})" if r.parent_run_id else ""
            where = "" if r.workspace is None or r.run_id in here else \
                f"  [workspace {r.workspace.path} on {r.workspace.host}]"
            click.echo(f"{r.run_id}  {r.status.value:<15} {r.started_at}  {r.graph_id}{parent}"
                       f"{where}")
    return int(ExitCode.OK)


# `rein runs show` lists every node of a run of up to this many; a larger run is summed up
# (how many of each status, counted by the store) with at most this many of its nodes that
# did not succeed or were skipped listed, so the time and memory do not grow with the run.
LISTED = 200
QUIET = (NodeStatus.SUCCEEDED, NodeStatus.SKIPPED)


@runs.command("show")
@click.argument("run_id", metavar="[RUN_ID|FILE]", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "dot", "svg"]),
              default="text", show_default=True,
              help="text, or a picture of the graph with each node coloured by its state.")
@workspace_option
@json_option
def show_run(run_id: str | None, fmt: str, workspace: Path | None, as_json: bool) -> int:
    """One run (the newest without an argument): status, durations, every node with its
    failed attempts, their reasons and the evidence of failed criteria, who approved what
    and when, who cancelled it and why, and what it waits for.

    An argument that names an existing file is read as an AGS run record (from `rein runs
    record`, or written by any other harness), checked against the AGS run schema;
    anything else is a run id in this workspace's store.

    \b
    Example:
      rein runs show
      rein runs show run-20260101T120000-3f9a1c
      rein runs show record.json --json
      rein runs show run-20260101T120000-3f9a1c --format svg > run.svg

    \b
    Exit codes: 0 ok, 1 no such run, or the file is not a valid run record, 4 --format svg
    without Graphviz, 64 usage error.
    """
    if run_id is not None and Path(run_id).is_file():
        if fmt != "text":
            raise click.UsageError("--format draws a run of the workspace's store; a record "
                                   "file is shown as text or --json")
        return show_record_file(Path(run_id), as_json)
    if fmt != "text":
        if as_json:
            raise click.UsageError("--json prints the run as data; leave out --format")
        from rein.cli.pictures import run_picture

        with _reads(workspace) as harness:
            click.echo(run_picture(harness, _run(harness, run_id), fmt), nl=False)
        return int(ExitCode.OK)
    with _reads(workspace) as harness:
        run = _run(harness, run_id)
        counts = harness.node_counts(run.run_id)
        if as_json:  # every node, without its record
            nodes = list(harness.iter_nodes(run.run_id, records=False))
        elif sum(counts.values()) <= LISTED:
            nodes = list(harness.iter_nodes(run.run_id))
        else:  # a large run: counted, and only the nodes that did not end well listed
            nodes = list(itertools.islice(harness.iter_nodes(run.run_id, exclude=QUIET),
                                          LISTED))
        asked = harness.approvals(run_id=run.run_id, include_children=False,
                                  pending_only=False)
        pending = [a for a in asked if a.status.value == "pending"]
        children = harness.child_runs(run.run_id)
        # with where each figure comes from: measured, attributed, self-reported or unknown
        usage = harness.usage_with_sources(run.run_id)
        # The operator's request to stop, as its event recorded it (who and why).
        asked_to_stop = harness.events(run.run_id, types=["run/cancel_requested"])
        cancel = asked_to_stop[-1].payload if asked_to_stop else None
        refused = None if run.status.terminal else harness.run_approval_problem(run.run_id)
    if as_json:
        emit_json({"run_id": run.run_id, "graph_id": run.graph_id, "status": run.status.value,
                   "digest": run.graph_digest, "parent_run_id": run.parent_run_id,
                   "started_at": run.started_at, "finished_at": run.finished_at,
                   "nodes": [{"node": n.node_key, "type": n.type, "status": n.status.value}
                             for n in nodes],
                   "pending_approvals": [a.approval_id for a in pending],
                   "approvals": [{"approval_id": a.approval_id, "kind": a.kind.value,
                                  "status": a.status.value, "answered_at": a.answered_at,
                                  "actor": (a.answer or {}).get("actor"),
                                  "given": (a.answer or {}).get("given")}
                                 for a in asked if a.status.value != "pending"],
                   "children": [c.run_id for c in children],
                   # null where no worker measured it (a driver that reported no usage)
                   "usage": dict(usage),
                   **({"approval_refused": refused} if refused is not None else {})})
        return int(ExitCode.OK)
    print_report(run, nodes, asked, children, usage, cancel, refused, counts=counts)
    return int(ExitCode.OK)


@runs.command("report")
@click.argument("run_ids", metavar="[RUN_ID...]", nargs=-1)
@report_options
@workspace_option
@json_option
def report_runs(run_ids: tuple[str, ...], agent_logs: tuple[Path, ...],
                beside: tuple[Path, ...], html_file: Path | None, workspace: Path | None,
                as_json: bool) -> int:
    """What the driving agent spent on a run (the newest without an argument): steps per
    command (every invocation of `rein next`, `submit` and `dev`), protocol errors (every
    refusal, the agent's apart from rein's own), time split into the agent's, a person's
    and rein's verification, and tokens and cost per command, turn and model, read from the
    agent's own records (Claude Code transcripts, Codex rollouts) and attributed by turn
    token; else what the agent reported of itself (self-reported); else unknown.

    Several runs make one report; --beside puts another workspace's newest run beside it.

    \b
    Example:
      rein runs report
      rein runs report run-20260101T120000-3f9a1c --json
      rein runs report --html report.html --agent-logs ~/.codex

    \b
    Exit codes: 0 printed, 1 no such run, 64 usage error.
    """
    from rein.cli.usage_report import keep_attribution, own_store, show

    with _reads(workspace) as harness:
        ids = list(run_ids) or [_run(harness, None).run_id]
        data = harness.usage_report([_run(harness, r).run_id for r in ids], agent_logs)
        keep_attribution(harness, data)
    others = []
    for other in beside:
        with own_store(other) as harness:
            others.append(harness.usage_report([_run(harness, None).run_id]))
    return show(data, others, as_json=as_json, html_file=html_file, title="RUN REPORT")


@runs.command("events")
@click.argument("run_id", required=False)
@click.option("--after", type=int, default=0, help="Only events with a larger seq.")
@click.option("--all", "everything", is_flag=True,
              help="Without --json: also the events a person rarely needs (active edges, "
                   "worker checkpoints, usage deltas).")
@click.option("--follow", "-f", is_flag=True,
              help="Keep streaming new events until the run ends (from any process).")
@click.option("--interval", type=click.FloatRange(min=0.01), default=0.2, show_default=True,
              help="With --follow: seconds between looks at the store.")
@click.option("--timeout", type=click.FloatRange(min=0), default=None,
              help="With --follow: stop after this many seconds (exit 3 if still going).")
@workspace_option
@json_option
def run_events(run_id: str | None, after: int, everything: bool, follow: bool,
               interval: float, timeout: float | None, workspace: Path | None,
               as_json: bool) -> int:
    """The run's event stream (the trace), in order (the newest run without RUN_ID).

    For a person, one line per event that tells something, with its time from the run's
    start, nothing cut; a notice repeated on every attempt is said once. --json prints
    every event as it is stored, one JSON object per line.

    With --follow, new events are printed as they are stored, by whichever process writes
    them, until the run reaches a terminal state; --json then ends with one summary object
    {"run_id", "status", "digest", "events"}.

    \b
    Example:
      rein runs events run-20260101T120000-3f9a1c --json
      rein runs events run-20260101T120000-3f9a1c --follow --json

    \b
    Exit codes: 0 ok (with --follow: the run ended), 1 no such run, 3 --timeout passed
    while the run was still going, 64 usage error.
    """
    with _reads(workspace) as harness:
        run = _run(harness, run_id)
        count = run_sync(_stream(harness, run.run_id, after, follow, interval, timeout,
                                 as_json, everything))
        run = harness.run(run.run_id)
    if as_json:
        emit_json_line({"run_id": run.run_id, "status": run.status.value,
                        "digest": run.graph_digest, "events": count})
    return int(ExitCode.WAITING) if follow and not run.status.terminal else int(ExitCode.OK)


async def _stream(harness: Any, run_id: str, after: int, follow: bool, interval: float,
                  timeout: float | None, as_json: bool, everything: bool) -> int:
    from rein.cli.event_text import EventText
    from rein.cli.output import shown

    text = EventText(everything=everything)
    if after:  # times count from the run's start, also for a tail of the stream
        async for first in harness.subscribe(run_id, 0):
            text.started_at = first.at
            break
    count = 0
    async for e in harness.subscribe(run_id, after, follow=follow, interval=interval,
                                     timeout=timeout):
        count += 1
        if as_json:
            emit_json_line(e.to_json())
        else:
            for line in text.lines(e):
                click.echo(shown(line))
    if not as_json and text.left_out:
        click.echo(f"({text.left_out} more events: --all shows them, --json has them all)")
    return count


@runs.command("record")
@click.argument("run_id", required=False)
@workspace_option
@click.option("--json", "as_json", is_flag=True, hidden=True,
              help="Accepted for symmetry: the record is always JSON.")
def run_record(run_id: str | None, workspace: Path | None, as_json: bool) -> int:
    """The AGS run record (agentic-graph-run-1.0) of a run (the newest without RUN_ID), as
    JSON (with or without --json).

    \b
    Example:
      rein runs record run-20260101T120000-3f9a1c > record.json

    \b
    Exit codes: 0 ok, 1 no such run, 64 usage error.
    """
    with _reads(workspace) as harness:
        emit_json(harness.record(_run(harness, run_id).run_id))
    return int(ExitCode.OK)


@runs.command("trace")
@click.argument("run_id")
@click.option("--export", "export", is_flag=True,
              help="Also send the spans through OpenTelemetry (needs the otel extra and "
                   "OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_TRACES_EXPORTER=console).")
@workspace_option
@json_option
def run_trace(run_id: str, export: bool, workspace: Path | None, as_json: bool) -> int:
    """The run as trace spans: the run, its nodes, their attempts, child runs.

    Ids are derived from the run, so they match what a live exporter sent. --json prints
    {"run_id", "trace_id", "spans": [{"name", "label", "kind", "trace_id", "span_id",
    "parent_span_id", "start", "end", "attributes", "status", "status_message", "events",
    "links"}], "exported"}; "end" is null for a span still open (the run waits, or its
    rein died). Names are stable ("node"); "label" names the span for people ("node a").
    No OpenTelemetry package is needed unless --export is given; OTLP export needs
    opentelemetry-exporter-otlp as well.

    \b
    Example:
      rein runs trace run-20260101T120000-3f9a1c --json
      OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 rein runs trace RUN --export

    \b
    Exit codes: 0 ok, 1 no such run, 64 usage error (also --export without what it
    needs: the message names the missing package or variable).
    """
    import os

    with _reads(workspace) as harness:
        run = _run(harness, run_id)
        trace, spans = harness.spans(run.run_id)
    exported = None
    if export:
        from rein.telemetry.otel import exporter_from_env, send

        exporter = exporter_from_env(os.environ)
        try:
            exported = send(spans, exporter=exporter)
        finally:
            exporter.shutdown()
    if as_json:
        emit_json({"run_id": run.run_id, "trace_id": trace,
                   "spans": [s.to_json() for s in spans], "exported": exported})
        return int(ExitCode.OK)
    parents = {s.span_id: s.parent_span_id for s in spans}
    depth: dict[str, int] = {}
    for s in spans:
        level, up = 0, s.parent_span_id
        while up in parents and level < len(spans):
            level, up = level + 1, parents[up]
        depth[s.span_id] = level
    for s in sorted(spans, key=lambda s: (s.start, depth[s.span_id])):
        end = s.end or "(open)"
        click.echo(f"{s.span_id}  {s.start} .. {end}  {s.status:<5} "
                   f"{'  ' * depth[s.span_id]}{s.label or s.name}")
    if exported is not None:
        click.echo(f"exported {exported} spans")
    return int(ExitCode.OK)


@runs.command("cancel")
@click.argument("run_id")
@click.option("--note", default=None, help="Why (recorded with the request).")
@click.option("--actor", default=None, help="Refuse unless rein knows you by this name "
              "(a check: it never changes who is recorded).")
@workspace_option
@json_option
def cancel_run(run_id: str, note: str | None, actor: str | None, workspace: Path | None,
               as_json: bool) -> int:
    """Stop a run that has not ended, whatever it waits for (a driver, a person, a worker).

    Compensation runs for the nodes that had succeeded, and the run ends cancelled. To refuse
    one pending action instead, use `rein approvals decline`.

    \b
    Example:
      rein runs cancel run-20260101T120000-3f9a1c --note "wrong branch"

    \b
    Exit codes: 1 the run ended cancelled, 3 a compensation step waits, 4 refused (the run
    already ended, or another process is advancing it), 64 usage error.
    """
    from rein.cli.live import stored_events
    from rein.cli.run import announce, progress_for, render_outcome

    progress = progress_for(as_json, False)
    with open_harness(resolve_workspace(workspace), create=False,
                      listeners=[progress]) as harness, progress:
        harness.check_actor(actor)  # recorded as who cancelled, never a typed name
        announce(harness)
        progress.prime(run_id, stored_events(harness, run_id))
        outcome = run_sync(harness.cancel(run_id, actor=actor, note=note))
        progress.close()
        return render_outcome(outcome, as_json, harness)


def _more() -> None:
    # Commands kept in their own modules, one concept each.
    from rein.cli.prune import prune_runs
    from rein.cli.runs_watch import watch_run

    runs.add_command(watch_run)
    runs.add_command(prune_runs)


_more()
