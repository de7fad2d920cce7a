"""What ``rein runs report`` and ``rein dev report`` share: the options, the side-by-side
table, and printing a report as text, JSON or one self-contained HTML file."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json


def report_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--agent-logs PATH`` (repeatable), ``--beside DIR``, ``--html FILE``."""
    func = click.option(
        "--html", "html_file", type=click.Path(path_type=Path, dir_okay=False),
        help="Also write the report as one self-contained HTML file.")(func)
    func = click.option(
        "--beside", "beside", type=click.Path(path_type=Path, file_okay=False, exists=True),
        multiple=True, metavar="DIR",
        help="Another workspace's report beside this one (two drivers on one brief): the "
             "GF-V2 table, one row each.")(func)
    return click.option(
        "--agent-logs", "agent_logs", type=click.Path(path_type=Path, exists=True),
        multiple=True, metavar="PATH",
        help="Also read the agent records here (a file, or a folder such as a CODEX_HOME or "
             "a Claude Code config folder); the default places and those the agent's "
             "calls named are always read.")(func)


def show(report: Mapping[str, Any], beside: Sequence[Mapping[str, Any]], *, as_json: bool,
         html_file: Path | None, title: str) -> int:
    from rein.cli.usage_text import render, render_compared

    shown: Mapping[str, Any] = report
    if beside:
        shown = side_by_side([report, *beside])
    if html_file is not None:
        from rein.web.usage_html import html_report

        html_file.write_text(html_report(shown), encoding="utf-8")
    if as_json:
        emit_json(dict(shown))
    else:
        text = render_compared(shown) if beside else render(shown, title)
        click.echo(text, nl=False)
        if html_file is not None:
            click.echo(f"report: {html_file}")
    return 0


def own_store(workspace: Path) -> Any:
    """The Harness of a workspace named by ``--beside``, for reading, over that workspace's
    own store (its rein.toml's ``[store] url``, else its ``.rein/rein.db``): the ``--store``
    of the command names this workspace's."""
    from rein.cli.workspace import resolve_workspace
    from rein.engine.service import Harness

    return Harness.open(resolve_workspace(workspace), store_url=None, create=False,
                        surface="cli")


def keep_attribution(harness: Any, report: Mapping[str, Any]) -> None:
    """Record what the report attributed (budgets count it from then on); a store this
    process may not write is left as it is, and the report still printed."""
    from rein.errors import ReinError

    try:
        harness.record_usage(report)
    except ReinError:
        pass


def side_by_side(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several reports' GF-V2 rows, one per driver (two drivers on one brief)."""
    return {"report": reports[0]["report"], "compared": [
        {"workspace": r.get("workspace"), "stages": [s["run"] for s in r["stages"]],
         **r["summary"]} for r in reports]}


__all__ = ["keep_attribution", "own_store", "report_options", "show", "side_by_side"]
