"""``rein spec``: the specification flow, a brief to a reviewed specification bundle and the
development plan `rein dev` builds.

Parses, calls the flow (which calls the Harness), prints. ``rein spec`` alone starts or
continues the flow and prints the pending instruction; the agent answers it with ``rein
submit``, as for any run, and runs ``rein spec`` again whenever rein says so.
"""

from __future__ import annotations

from pathlib import Path

import click

from rein.cli.flows import Flow, group_json, group_workspace
from rein.cli.output import emit_json, json_option
from rein.cli.run import open_harness, resolve_workspace, workspace_option

_FLOW = Flow("rein.spec")
SPEC_EXITS = (
    "Exit codes: 0 an instruction for the agent, or ready (the plan is published), 1 "
    "stopped (a document refused every time, timeout, cancelled), 3 waiting for a person "
    "(an approval), 4 refused (a budget, an approval without the roles asked), 64 usage "
    "error."
)


@click.group("spec", invoke_without_command=True)
@workspace_option
@json_option
@click.pass_context
def spec(ctx: click.Context, workspace: Path | None, as_json: bool) -> int:
    """Turn the brief in specs/ into a reviewed specification and a development plan.

    `rein spec` starts the flow (or continues it) and prints what it waits for. The agent
    writes one document at a time (charter, requirements, design, acceptance, readiness
    review) and answers with `rein submit`, exactly as for any run; rein checks each
    document and gives back the specific reasons of a refusal; a person approves each
    document (or the bundle). READY publishes specs/active/40-development-plan.json, which
    `rein dev` builds without planning again. Editing the brief or an approved document
    afterwards reopens what depends on it.

    \b
    Example:
      mkdir specs && echo "A CLI that converts temperatures" > specs/brief.md
      rein spec                    # prints the charter instruction (exit 0)
      rein submit                  # after writing .rein/inbox.json
      rein spec status
    \b
    Exit codes: 0 an instruction for the agent, or ready (the plan is published), 1 stopped
    (a document refused every time, timeout, cancelled), 3 waiting for a person (an
    approval), 4 refused (a budget, an approval without the roles asked), 64 usage error.
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"workspace": workspace, "json": as_json}
        return 0
    return _FLOW.advance(workspace, as_json, new=False)


@spec.command("start", epilog=SPEC_EXITS)
@click.option("--new", is_flag=True, help="Abandon the current flow (its unfinished run is "
              "cancelled) and write the bundle again from the brief.")
@workspace_option
@json_option
@click.pass_context
def start(ctx: click.Context, new: bool, workspace: Path | None, as_json: bool) -> int:
    """Start the flow (or continue it; --new writes the bundle again from the brief).

    \b
    Example:
      rein spec start --new
    """
    return _FLOW.advance(group_workspace(ctx, workspace), as_json or group_json(ctx), new=new)


@spec.command("status", epilog=SPEC_EXITS)
@workspace_option
@json_option
@click.pass_context
def status_command(ctx: click.Context, workspace: Path | None, as_json: bool) -> int:
    """Where the flow stands: each document's state, the next action. Changes nothing.

    \b
    Example:
      rein spec status --json
    """
    return _FLOW.status(group_workspace(ctx, workspace), as_json or group_json(ctx))


@spec.command("report")
@workspace_option
@json_option
@click.pass_context
def report_command(ctx: click.Context, workspace: Path | None, as_json: bool) -> int:
    """Per document: steps, protocol errors, wall time, tokens and cost; read from the
    flow's runs (a reopened document counts in each) and the record of calls. A total over
    a turn whose usage is unknown is unknown, with the known part beside it, labelled; a
    model with no price is named, with how to give one.

    \b
    Example:
      rein spec report
      rein spec report --json | jq .totals

    \b
    Exit codes: 0 printed, 1 no flow here, 64 usage error.
    """
    from rein.spec import flow, report

    harness = open_harness(resolve_workspace(group_workspace(ctx, workspace)))
    with harness:
        state = flow.load_flow(harness.workspace)
        if state is None:
            from rein.errors import ReinError

            raise ReinError(f"no specification flow in {harness.workspace}", code="SPEC404",
                            hint="start one with `rein spec`")
        data = report.build(harness, state)
    if as_json or group_json(ctx):
        emit_json(data)
    else:
        click.echo(report.render(data), nl=False)
    return 0
