"""``rein run``: start an approved graph (``rein resume`` continues one: :mod:`rein.cli.resume`).

The Harness decides; this module parses the command, asks for approval of the exact graph
digest, calls the Harness and prints the plan and the progress.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from rein.cli.live import Progress
from rein.cli.output import emit_json, emit_json_line, json_option
from rein.cli.sync import run_sync
from rein.cli.workspace import open_harness, resolve_workspace, workspace_option
from rein.engine.service import Harness
from rein.errors import ExitCode, Refused


def announce(harness: Harness) -> None:
    """Before a run advances: a notice on stderr when the project file's commands are
    withheld for want of trust (stderr: --json output stays one object)."""
    if (notice := harness.trust_notice()) is not None:
        click.echo(f"notice: {notice}", err=True)


def quiet_option(func: Any) -> Any:
    return click.option("--quiet", "-q", "quiet", is_flag=True,
                        help="No progress while the run advances: only its outcome.")(func)


def progress_for(as_json: bool, quiet: bool,
                 limits: Any = None) -> Progress:
    """The progress a command shows: a redrawing view on a terminal, plain lines on a pipe
    (stderr), JSON lines with --json, nothing with --quiet."""
    return Progress(as_json, quiet=quiet, limits=limits, live=None, header=True)


def exit_for(status: Any) -> int:
    from rein.core.states import RunStatus

    if status is RunStatus.SUCCEEDED:
        return int(ExitCode.OK)
    if status in (RunStatus.WAITING, RunStatus.AWAITING_HUMAN, RunStatus.RUNNING):
        return int(ExitCode.WAITING)
    return int(ExitCode.FAILURE)


def executor_option(func: Any) -> Any:
    """``--executor dbos|in-process``: where this command runs node attempts."""
    return click.option(
        "--executor", "executor", type=click.Choice(["in-process", "dbos"]), default=None,
        help="Where node attempts run: in-process (the default), or dbos: on the queues of "
             "a PostgreSQL store, taken by `rein worker` processes (docs/scale-out.md). "
             "Overrides [executor] kind and REIN_EXECUTOR for this command.")(func)


def open_placed(workspace: Path, executor: str | None, *, create: bool = True,
                listeners: Any = ()) -> Harness:
    """The Harness with ``--executor`` applied (it wins over ``REIN_EXECUTOR`` and
    ``[executor]``), checked before anything is written."""
    import os

    from rein.cli.workspace import given_store, sign_here

    env = dict(os.environ)
    if executor is not None:
        env["REIN_EXECUTOR"] = executor
    harness = Harness.open(workspace, store_url=given_store(), create=create,
                           listeners=listeners, env=env, surface="cli", signer=sign_here)
    harness.check_executor()
    return harness


def print_plan(prepared: Any) -> None:
    plan = prepared.plan
    click.echo(f"graph   {plan.graph_id}: {plan.title}")
    click.echo(f"file    {prepared.path}")
    nodes = list(plan.nodes())
    click.echo(f"nodes   {len(nodes)} in {len(list(plan.scopes()))} scope(s); "
               f"worst case {plan.worst_case_executions} node executions")
    click.echo(("cost    " + (f"projected ${plan.projected_cost_usd:.2f}" if plan.cost_estimated
                              else "unknown: no node estimates its cost"))
               + (f" (limit ${plan.constraints['max_cost_usd']})"
                  if plan.constraints.get("max_cost_usd") else ""))
    if plan.gates:
        click.echo(f"people  {len(plan.gates)} place(s) where a person is asked:")
        for g in plan.gates:
            click.echo(f"          {g.node or 'graph'}: {g.kind} {g.mode}"
                       + (f" at {g.at}" if g.at else ""))
    if prepared.params:
        click.echo("params  " + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                                          for k, v in prepared.params.items()))
    for child, digest in prepared.children.items():
        click.echo(f"child   {child} {digest}")
    for notice in prepared.notices:
        click.echo(f"notice  {notice}")
    click.echo(f"digest  {prepared.digest}")


def _prepare(harness: Harness, graph: str, params: tuple[str, ...], params_file: str | None
             ) -> Any:
    from rein.engine.run.params import parse_assignments, read_params_file

    given: dict[str, Any] = read_params_file(params_file) if params_file else {}
    raw = parse_assignments(params)
    given.update(raw)
    return run_sync(harness.prepare(graph, given=given, raw=frozenset(raw)))


def _report_prepare(exc: Any, as_json: bool, graph: str) -> int:
    if as_json:
        emit_json({"path": graph, "status": "refused",
                   "findings": [f.to_json() for f in getattr(exc, "findings", [])]})
    else:
        for f in getattr(exc, "findings", []):
            click.echo(f.render(), err=True)
        click.echo(f"{graph}: the run cannot start", err=True)
    return int(ExitCode.FAILURE)


@click.command("run")
@click.argument("graph", type=click.Path(dir_okay=False))
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A graph parameter (repeatable). JSON for non-string types.")
@click.option("--params", "params_file", type=click.Path(dir_okay=False), default=None,
              help="A YAML or JSON file of parameters.")
@click.option("--dry-run", is_flag=True, help="Check everything, run nothing, write nothing.")
@click.option("--approve", "approve", metavar="DIGEST", default=None,
              help="Approve this exact graph digest (as `rein graph digest` prints it).")
@quiet_option
@executor_option
@workspace_option
@json_option
def run_command(graph: str, params: tuple[str, ...], params_file: str | None, dry_run: bool,
                approve: str | None, quiet: bool, executor: str | None,
                workspace: Path | None, as_json: bool) -> int:
    """Run an Agentic Graph after approving its exact digest.

    Prints the plan (nodes, worst-case executions, projected cost, where people are asked)
    and needs approval of the graph digest: interactively on a terminal, or with --approve.
    The approval binds the parameters and the digests of referenced child documents too.

    While the run advances, a terminal shows a redrawing view of its nodes (attempts,
    durations, loop iterations, map items, the budget spent, what it waits for); a pipe
    gets one plain line per change on stderr, --json one JSON line per event on stdout,
    --quiet only the outcome. NO_COLOR turns colours off. `rein runs watch` shows the same
    view from another shell.

    \b
    Example:
      rein run release.agraph.yaml --dry-run
      rein run release.agraph.yaml --param version=1.2.0 --approve sha256-...
      rein run map.agraph.yaml --executor dbos --store postgresql://rein@db/rein \\
          --approve sha256-...   # attempts run on `rein worker` processes

    \b
    Exit codes: 0 succeeded (or dry run could start), 1 failed / partial / cannot start,
    3 waiting for a person or a worker, 4 approval missing or stale, 64 usage error
    (--executor dbos without a PostgreSQL store: SCALE002).
    """
    if approve is not None and not approve.startswith("sha256-"):
        # Often an option swallowed as the value: `--approve --dry-run`.
        raise click.BadParameter(
            f"takes the graph digest that `rein graph digest {graph}` prints (sha256-...), "
            f"not {approve!r}", param_hint="'--approve'")
    progress = progress_for(as_json, quiet)
    harness = open_placed(resolve_workspace(workspace), executor, listeners=[progress])
    with harness, progress:
        return _run(harness, graph, params, params_file, dry_run, approve, as_json, progress)


def _run(harness: Harness, graph: str, params: tuple[str, ...], params_file: str | None,
         dry_run: bool, approve: str | None, as_json: bool, progress: Progress) -> int:
    from rein.engine.run.prepare import PrepareFailed

    try:
        prepared = _prepare(harness, graph, params, params_file)
    except PrepareFailed as exc:
        return _report_prepare(exc, as_json, graph)
    if dry_run:
        if as_json:
            emit_json({"path": graph, "status": "ready", "digest": prepared.digest,
                       "params": dict(prepared.params), "children": dict(prepared.children),
                       "worst_case_executions": prepared.plan.worst_case_executions,
                       "notices": list(prepared.notices)})
        else:
            print_plan(prepared)
            click.echo(f"dry run: the run could start. To run it, approve the digest:\n"
                       f"  rein run {graph} --approve {prepared.digest}")
        return int(ExitCode.OK)
    if not as_json and not (progress.quiet and approve is not None):
        print_plan(prepared)
    progress.limits = dict(prepared.plan.constraints)
    # The top-level nodes are listed from the start, pending until they begin.
    progress.seeds = [(n.id, n.type, n.title) for n in prepared.plan.root.in_order()]
    if approve is None:
        if sys.stdin.isatty() and not as_json:
            from rein.cli.prompt import approved, not_approved

            if not approved(f"Approve {prepared.digest} and run?"):
                return not_approved("nothing ran", "to run it later: "
                                    f"rein run {graph} --approve {prepared.digest}")
            approve = prepared.digest
        else:
            raise Refused(
                f"running needs approval of the graph digest {prepared.digest}",
                code="APPROVAL_MISSING",
                hint=f"review the plan, then pass --approve {prepared.digest}",
            )
    if approve == prepared.digest:
        announce(harness)
    # APPROVAL_STALE before the store exists; recorded as approved by the approver rein
    # knows, not a typed name.
    seen = _FirstRun()
    harness.listeners.append(seen)
    try:
        outcome = run_sync(harness.start(prepared, approved=approve))
    except KeyboardInterrupt:
        progress.close()
        return interrupted(seen.run_id)
    progress.close()  # the last view stays above the outcome
    return render_outcome(outcome, as_json, harness, progress)


class _FirstRun:
    """The id of the run this command started, from the first event it commits."""

    def __init__(self) -> None:
        self.run_id: str | None = None

    def __call__(self, event: Any) -> None:
        if self.run_id is None:
            self.run_id = str(event.run_id)


def interrupted(run_id: str | None) -> int:
    """Ctrl-C while a run advanced: the work in flight is left as a kill leaves it (not
    cancelled), so the run continues where it stopped. Exit 130, as for SIGINT."""
    if run_id is None:
        click.echo("interrupted before the run began", err=True)
    else:
        click.echo(f"interrupted: run {run_id} stopped where it was; `rein resume {run_id}` "
                   "continues it (the work in flight runs again)", err=True)
    return 130


def render_outcome(outcome: Any, as_json: bool, harness: Harness | None = None,
                   progress: Progress | None = None) -> int:
    """The run's outcome line, and for a paused run what to type next, naming the real
    approval ids (``harness`` given: the queue is read for them). An approval the redrawn
    view above (``progress``) already names is not named again; each command is on a line
    of its own, so that a terminal never breaks one inside an id."""
    if as_json:
        emit_json_line(outcome.to_json())
        return exit_for(outcome.status)
    click.echo(f"run {outcome.run_id}: {outcome.status.value}")
    if outcome.status.value == "waiting":  # a driver instruction, or no worker
        command = "rein next"
        if harness is not None:  # a run of a flow: the flow's own command says more
            from rein.core.flows import continued_by

            flow = continued_by(harness.run(outcome.run_id).graph_id)
            command = command if flow is None else flow[1]
        click.echo(f"  `{command}` prints what it waits for (a driver answers with "
                   "`rein submit`)")
    elif outcome.status.value == "awaiting_human":
        pending = [] if harness is None else harness.approvals(run_id=outcome.run_id)
        for a in pending:
            if progress is not None and progress.drew(f"approval:{a.approval_id}"):
                continue
            node = a.request.get("node") or "graph"
            click.echo(f"  waiting for approval {a.approval_id} ({a.kind.value}) {node}: "
                       f"{a.request.get('prompt') or ''}".rstrip(": "))
        ids = [str(a.approval_id) for a in pending] or ["ID"]
        click.echo(f"  look:    rein approvals show {ids[0]}")
        click.echo(f"  answer:  rein approvals accept {ids[0]}  (the run goes on)")
        # accept continues the run itself; resume is only for an answer recorded alone.
        click.echo(f"  resume:  rein resume {outcome.run_id}  (after --no-continue)")
    return exit_for(outcome.status)


run = run_command

# Progress is re-exported: `rein submit` shows its plain lines through this module.
__all__ = ["Progress", "announce", "exit_for", "open_harness", "print_plan",
           "progress_for", "quiet_option", "render_outcome", "resolve_workspace", "run",
           "workspace_option"]
