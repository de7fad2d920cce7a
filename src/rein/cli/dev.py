"""``rein dev``: the development flow, a brief to a verified, committed product.

Parses, calls the flow (which calls the Harness), prints. ``rein dev`` alone starts or
continues the flow and prints the pending instruction; the agent then answers it with
``rein submit``, as for any run, and runs ``rein dev`` again whenever rein says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rein.cli.flows import Flow, group_json, group_workspace
from rein.cli.output import json_option
from rein.cli.run import open_harness, resolve_workspace, workspace_option
from rein.cli.usage_report import report_options

_FLOW = Flow("rein.dev")
DEV_EXITS = (
    "Exit codes: 0 an instruction for the agent, or done (every feature verified and "
    "committed), 1 stopped (failed, blocked, timeout, cancelled), 3 waiting for a person "
    "(an approval), 4 refused (a budget only a person can raise, a dirty tree, not a git "
    "repository), 64 usage error."
)


@click.group("dev", invoke_without_command=True)
@workspace_option
@json_option
@click.pass_context
def dev(ctx: click.Context, workspace: Path | None, as_json: bool) -> int:
    """Turn the briefs in specs/ into a verified, committed product, one feature at a time.

    `rein dev` starts the flow (or continues it) and prints what it waits for. The agent
    does the instruction and answers with `rein submit`, exactly as for any run; rein
    checks the plan, runs each feature's verify command itself, commits each feature, and
    says when it stopped and why. A person approves the feature graph before it runs.

    \b
    Example:
      mkdir specs && echo "A CLI that converts temperatures" > specs/brief.md
      rein dev                     # prints the planning instruction (exit 0)
      rein submit                  # after writing .rein/inbox.json
      rein dev status
      rein dev report --json
    \b
    Exit codes: 0 an instruction for the agent, or done (every feature verified and
    committed), 1 stopped (failed, blocked, timeout, cancelled), 3 waiting for a person (an
    approval), 4 refused (a budget only a person can raise, a dirty tree, not a git
    repository), 64 usage error.
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"workspace": workspace, "json": as_json}
        return 0
    return _FLOW.advance(workspace, as_json, new=False)


@dev.command("start", epilog=DEV_EXITS)
@click.option("--new", is_flag=True, help="Abandon the current flow (its unfinished runs "
              "are cancelled, commits stay) and plan again from the briefs.")
@workspace_option
@json_option
@click.pass_context
def start(ctx: click.Context, new: bool, workspace: Path | None, as_json: bool) -> int:
    """Start the flow (or continue it; --new plans again from the briefs).

    \b
    Example:
      rein dev start --new
    """
    return _FLOW.advance(group_workspace(ctx, workspace), as_json or group_json(ctx), new=new)


@dev.command("status", epilog=DEV_EXITS)
@workspace_option
@json_option
@click.pass_context
def status_command(ctx: click.Context, workspace: Path | None, as_json: bool) -> int:
    """Where the flow stands: the stage, each feature's state, the next action. Changes
    nothing.

    \b
    Example:
      rein dev status --json
    """
    return _FLOW.status(group_workspace(ctx, workspace), as_json or group_json(ctx))


@dev.command("report")
@report_options
@workspace_option
@json_option
@click.pass_context
def report_command(ctx: click.Context, agent_logs: tuple[Path, ...],
                   beside: tuple[Path, ...], html_file: Path | None,
                   workspace: Path | None, as_json: bool) -> int:
    """What the flow cost: steps per command (every invocation of `rein next`, `submit` and
    `dev`), protocol errors (every refusal, the agent's apart from rein's own), time split
    into the agent's, a person's and rein's verification, and tokens and cost per command,
    feature, turn and model, read from the agent's own records (Claude Code transcripts,
    Codex rollouts) and attributed by turn token; else what the agent reported of itself
    (self-reported); else unknown, never zero.

    \b
    Example:
      rein dev report
      rein dev report --json | jq .summary
      rein dev report --html report.html
      rein dev report --beside ../other-driver      # the GF-V2 table, one row per driver

    \b
    Exit codes: 0 printed, 1 no flow here, 64 usage error.
    """
    from rein.cli.usage_report import show

    data = _report(group_workspace(ctx, workspace), agent_logs)
    others = [_report(other, (), beside=True) for other in beside]
    return show(data, others, as_json=as_json or group_json(ctx), html_file=html_file,
                title=f"DEV REPORT (plan {data['plan_id']})")


def _report(workspace: Path | None, agent_logs: tuple[Path, ...], *, beside: bool = False
            ) -> dict[str, Any]:
    from rein.cli.usage_report import own_store
    from rein.dev import flow, report

    harness = own_store(workspace or Path.cwd()) if beside else \
        open_harness(resolve_workspace(workspace))
    with harness:
        state = flow.load_flow(harness.workspace)
        if state is None:
            from rein.errors import ReinError

            raise ReinError(f"no development flow in {harness.workspace}", code="DEV404",
                            hint="start one with `rein dev`")
        data = report.build(harness, state, agent_logs)
        from rein.cli.usage_report import keep_attribution

        keep_attribution(harness, data)
        return data
