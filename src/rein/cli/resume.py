"""``rein resume``: say what continuing a run will do, then do it (or only say, --dry-run).

What it will do is read from the store and the files before anything is locked or
recorded (:meth:`rein.engine.service.Harness.resume_plan`): the nodes adopted as they are,
the attempts that were in flight when a rein stopped (their effects uncertain), the
questions still open, and whether the files changed since the approval (RT053).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rein.cli.live import stored_events
from rein.cli.output import emit_json, json_option
from rein.cli.run import (
    announce,
    executor_option,
    interrupted,
    open_placed,
    progress_for,
    quiet_option,
    render_outcome,
)
from rein.cli.run_pick import pick_run
from rein.cli.sync import run_sync
from rein.cli.workspace import resolve_workspace, workspace_option
from rein.errors import ExitCode

# What each action of the plan means, said to a person.
_SAYS = {
    "continue": "continue where it stopped",
    "recover": "recover it: its rein stopped mid-way; attempts in flight are marked "
               "interrupted and run again",
    "reopen": "reopen it: its policy.resume ({policy}) runs its failed nodes again",
    "restart": "start a new run under the same approval (policy.resume: restart)",
    "nothing": "nothing: the run ended {status}",
    "refused": "refuse (RT053): the files changed since the approval; --force continues "
               "under the files as they are now (recorded)",
    "locked": "refuse (RUN_LOCKED): another rein process advances this run now",
}

_WHY = {"irreversible": "the node is marked irreversible",
        "before_side_effects": "if it had passed its before_side_effects checkpoint"}


def show_plan(plan: Any, *, force: bool = False) -> None:
    """The plan of a resume, for a person (stdout, as `rein run` prints its plan)."""
    click.echo(f"run      {plan.run_id} ({plan.status.value})")
    says = "continue under the files as they are now (--force: the override is recorded)" \
        if force and plan.action == "refused" else _SAYS[plan.action]
    click.echo("will     " + says.format(policy=plan.policy, status=plan.status.value))
    done = ", ".join(f"{node} {status}" for node, status in plan.completed)
    click.echo(f"done     {len(plan.completed)} node(s) kept as they are"
               + (f": {done}" if done else ""))
    if plan.rerun:
        click.echo(f"again    {', '.join(plan.rerun)} (failed: run again)")
    for f in plan.in_flight:
        then = f"a person confirms the re-run first ({_WHY[f.confirm]})" if f.confirm \
            else "runs again"
        click.echo(f"uncertain {f.node} attempt {f.attempt} was in flight (its effects may "
                   f"have happened): {then}")
    for g in plan.gates:
        click.echo(f"waits    approval {g.approval_id} ({g.kind}) {g.node}"
                   + (f": {g.prompt}" if g.prompt else ""))
    if plan.changed:
        click.echo(f"graph    changed since the approval: {', '.join(plan.changed)}")
    else:
        click.echo("graph    unchanged since the approval")


@click.command("resume")
@click.argument("run_id", required=False)
@click.option("--force", is_flag=True, help="Resume although the graph, params or children "
              "changed since approval (recorded).")
@click.option("--dry-run", is_flag=True, help="Say what resuming would do; change nothing.")
@quiet_option
@executor_option
@workspace_option
@json_option
def resume_command(run_id: str | None, force: bool, dry_run: bool, quiet: bool,
                   executor: str | None, workspace: Path | None, as_json: bool) -> int:
    """Continue a run that is waiting or was interrupted (the newest run when none is named).

    First says what it will do: the nodes kept as they are, the attempts that were in
    flight when a rein stopped (their effects are uncertain: each runs again, or a person
    confirms first), the approvals still open, and whether the graph, its parameters or a
    child document changed since the approval. --dry-run stops there (--json: one object).

    Refuses (RT053, exit 4) when the files changed since the run was approved, unless
    --force, which approves the files as they are now: a person's to give, refused in an
    agent's sandbox (APPROVAL003); the override is recorded with how it was given.

    \b
    Example:
      rein resume --dry-run
      rein resume run-20260101T120000-3f9a1c
      rein resume run-20260101T120000-3f9a1c --executor dbos --store postgresql://rein@db/rein

    \b
    Exit codes: 0 succeeded (or, with --dry-run, the plan was shown), 1 failed / partial,
    3 still waiting, 4 refused, 64 usage error (--executor dbos without a PostgreSQL
    store: SCALE002).
    """
    progress = progress_for(as_json, quiet)
    with open_placed(resolve_workspace(workspace), executor, create=False,
                     listeners=[progress]) as harness, progress:
        run_id = str(pick_run(harness, run_id).run_id)
        if dry_run:
            plan = harness.resume_plan(run_id)
            if as_json:
                emit_json(plan.to_json())
            else:
                show_plan(plan, force=force)
                click.echo(f"dry run: nothing was changed. To continue: rein resume {run_id}"
                           + (" --force" if plan.action == "refused" or force else ""))
            return int(ExitCode.OK)
        if not as_json and not quiet:
            show_plan(harness.resume_plan(run_id), force=force)
        announce(harness)
        progress.limits = harness.limits(run_id)
        progress.seeds = harness.top_nodes(run_id)
        progress.prime(harness.run(run_id).run_id, stored_events(harness, run_id))
        # Takes the run lock (RUN_LOCKED, exit 4), then holds the run to its approval
        # (RT053) and records a --force override.
        try:
            outcome = run_sync(harness.resume(run_id, force=force))
        except KeyboardInterrupt:
            progress.close()
            return interrupted(harness.run(run_id).run_id)
        progress.close()
        return render_outcome(outcome, as_json, harness, progress)


resume = resume_command

__all__ = ["resume", "show_plan"]
