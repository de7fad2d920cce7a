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
        from rein.engine.usage_report import side_by_side

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


__all__ = ["report_options", "show"]
