"""What ``rein dev`` and ``rein spec`` share: a flow command starts or continues its flow,
prints where it stands (an instruction for the agent, a stop, or done) and exits with the
stop's code. Each flow brings its own ``advance``/``status`` (in ``rein.dev.flow`` or
``rein.spec.flow``) and its own renderer; the printing, the call record and the group's
options are the same.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json
from rein.cli.run import open_harness, resolve_workspace
from rein.cli.sync import run_sync


class Flow:
    """One flow's modules by name (imported when a command runs, not when rein starts)."""

    __slots__ = ("flow", "render")

    def __init__(self, package: str) -> None:
        self.flow = f"{package}.flow"
        self.render = f"{package}.render"

    def advance(self, workspace: Path | None, as_json: bool, *, new: bool) -> int:
        """Start (``new``) or continue the flow and print where it stands."""
        module = importlib.import_module(self.flow)
        harness = open_harness(resolve_workspace(workspace))
        with harness:
            where = run_sync(module.advance(harness, new=new))
        return self.show(where, as_json, instruction=True)

    def status(self, workspace: Path | None, as_json: bool) -> int:
        """Where the flow stands; changes nothing."""
        module = importlib.import_module(self.flow)
        harness = open_harness(resolve_workspace(workspace))
        with harness:
            where = module.status(harness)
        return self.show(where, as_json, instruction=False)

    def show(self, where: dict[str, Any], as_json: bool, *, instruction: bool) -> int:
        from rein.cli.calls import note

        note(where)
        if as_json:
            emit_json(where)
        else:
            render: Callable[..., str] = importlib.import_module(self.render).render
            click.echo(render(where, instruction=instruction), nl=False)
        return int(where["exit_code"])


def group_workspace(ctx: click.Context, workspace: Path | None) -> Path | None:
    """``--workspace`` given to the subcommand, else to its group (``rein dev -w X status``)."""
    parent = (ctx.parent.obj or {}) if ctx.parent is not None else {}
    return workspace or parent.get("workspace")


def group_json(ctx: click.Context) -> bool:
    """``--json`` given to the group applies to its subcommands."""
    parent = (ctx.parent.obj or {}) if ctx.parent is not None else {}
    return bool(parent.get("json"))
