"""The root command group. Subcommands load lazily so that ``rein --help`` starts fast."""

from __future__ import annotations

import errno
import importlib
from typing import Any

import click

from rein.core.version import VERSION

# name → "module:attribute"; the module is imported only when the command runs or is listed.
COMMANDS: dict[str, str] = {
    "graph": "rein.cli.graph:graph",
    "profile": "rein.cli.profile:profile",
    "config": "rein.cli.config:config",
    "run": "rein.cli.run:run",
    "resume": "rein.cli.resume:resume",
    "runs": "rein.cli.runs:runs",
    "approvals": "rein.cli.approvals:approvals",
    "next": "rein.cli.driver:next_",
    "submit": "rein.cli.driver:submit",
    "driver": "rein.cli.driver:driver",
    "init": "rein.cli.driver_init:init",
    "doctor": "rein.cli.doctor:doctor",
    "app-server": "rein.cli.app_server:app_server",
    "dev": "rein.cli.dev:dev",
    "spec": "rein.cli.spec:spec",
    "eval": "rein.cli.eval:eval_",
    "acp": "rein.cli.acp:acp",
    "serve": "rein.cli.serve:serve",
    "worker": "rein.cli.worker:worker",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr = self.lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command), self.lazy[cmd_name]
            return command
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """The command; a reader that went away (``rein runs events | head``) is not an
        error: the output stops and the command exits 0, as the plain forms of ``next`` and
        ``submit`` do (click would exit 1)."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            from rein.cli.safe_output import park_stdout

            park_stdout()
            raise click.exceptions.Exit(0) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing help for every command would import them all; short help lives here instead.
        rows = [(name, SHORT_HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


SHORT_HELP: dict[str, str] = {
    "graph": "Validate, plan and digest Agentic Graphs (AGS 1.0).",
    "profile": "Validate, resolve, narrow and update Open Agent Profiles (OAP 1.0).",
    "config": "Show the merged rein.toml; trust or untrust a project's commands and URLs.",
    "run": "Run an Agentic Graph after approving its digest.",
    "resume": "Continue a waiting or interrupted run.",
    "runs": "Inspect runs: list, show, report, cancel, watch, events, record, trace, prune.",
    "approvals": "Answer the approval queue: list, show, accept, decline, cancel.",
    "next": "Print the instruction a run waits for (you are its driver), or why it waits.",
    "submit": "Answer the pending instruction with a JSON envelope; advance the run.",
    "driver": "The driver protocol: instruction and envelope JSON Schemas.",
    "init": "Set a workspace up: an IDE agent's instructions, a first graph or brief, examples.",
    "doctor": "Check this machine's setup (store, sandbox, Graphviz, providers, approver).",
    "dev": "The development flow: briefs in specs/ to verified, committed features.",
    "spec": "The specification flow: a brief to a reviewed bundle and the plan rein dev builds.",
    "eval": "Run a scenario suite under several harness configurations: which is better.",
    "app-server": "Serve threads and turns to a Codex client over stdio (app-server v2).",
    "acp": "Serve ACP sessions (Agent Client Protocol) to an editor over stdio.",
    "serve": "The web console: watch runs live, answer approvals, approve and run plans.",
    "worker": "Take node attempts from PostgreSQL queues (scale-out through DBOS).",
}


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Exit codes: 0 ok, 1 failure, 2 warnings under --strict, 3 waiting, "
    "4 refused, 64 usage error.",
)
@click.version_option(VERSION, prog_name="rein", message="%(prog)s %(version)s")
def cli() -> None:
    """rein: a deterministic harness for AI agents.

    Plans are Agentic Graphs (AGS 1.0), workers are Open Agent Profiles (OAP 1.0), and rein
    decides what happens next and whether it is done.

    \b
    Example:
      rein init --example no-worker      # a graph shipped with rein, copied here
      rein graph plan no-worker.agraph.yaml
      rein run no-worker.agraph.yaml --dry-run
      rein doctor                        # what this machine has, and how to fix what it lacks
    """
