"""Drawing a plan or a run for people: Mermaid and DOT source from the pure renderers, and
SVG through Graphviz's ``dot`` when it is installed (DRAW001 with how to get it, when not).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from rein.errors import Refused, ReinError

if TYPE_CHECKING:
    from rein.formats.ags.pictures import States
    from rein.formats.ags.plan_model import Plan

FORMATS = ("mermaid", "dot", "svg")
_DOT_SECONDS = 60  # a plan of a few hundred nodes takes well under a second
_INDEX = re.compile(r"\[\d+\]")


def draw(plan: Plan, fmt: str, states: States | None = None) -> str:
    """The picture of ``plan`` (coloured by ``states`` for a run) in ``fmt``."""
    from rein.formats.ags.pictures import render_dot, render_mermaid

    if fmt == "mermaid":
        return render_mermaid(plan, states)
    source = render_dot(plan, states)
    return svg(source) if fmt == "svg" else source


def svg(dot_source: str) -> str:
    """``dot_source`` drawn as SVG by Graphviz."""
    dot = shutil.which("dot")
    if dot is None:
        raise Refused("drawing SVG needs Graphviz's `dot`, which is not on PATH",
                      code="DRAW001",
                      hint="install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: "
                           "brew install graphviz), or print the source with --format dot "
                           "(or mermaid) and draw it elsewhere")
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True,
                              text=True, timeout=_DOT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReinError(f"Graphviz's dot did not finish: {exc}", code="DRAW002",
                        hint="run the --format dot output through `dot -Tsvg` to see why") \
            from exc
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else \
            f"exit status {done.returncode}"
        raise ReinError(f"Graphviz's dot could not draw the picture: {why}", code="DRAW002",
                        hint="run the --format dot output through `dot -Tsvg` to see why")
    return done.stdout


def run_picture(harness: Any, run: Any, fmt: str) -> str:
    """The picture of a run: its graph's plan with every node coloured by the state it
    reached (subgraph child runs included). The graph is read again from the file the run
    started from; a file changed since is drawn with a note on stderr."""
    import click

    from rein.formats.ags import validate_path
    from rein.formats.ags.plan import build_plan

    report = validate_path(run.graph_path, limits=harness.config.limits)
    if report.errors or report.document is None:
        why = report.errors[0].message if report.errors else "it cannot be read"
        raise ReinError(f"cannot draw run {run.run_id}: {run.graph_path}: {why}",
                        code="DRAW003", hint="restore the file the run started from")
    if report.digest != run.graph_digest:
        click.echo(f"note: {run.graph_path} changed since run {run.run_id} started "
                   f"({run.graph_digest}); nodes are matched by id", err=True)
    plan = build_plan(report.document.data, source=run.graph_path, digest=report.digest)
    return draw(plan, fmt, run_states(harness, run))


def run_states(harness: Any, run: Any, prefix: str = "") -> dict[str, list[str]]:
    """Each node's statuses by qualified id: ``loop[2].step`` counts towards ``loop.step``,
    and a child run's nodes sit under the subgraph node that started it."""
    states: dict[str, list[str]] = {}
    for row in harness.nodes(run.run_id):
        states.setdefault(prefix + _plain(row.node_key), []).append(row.status.value)
    for child in harness.child_runs(run.run_id):
        inner = prefix + _plain(child.parent_node_key or "") + "."
        for key, found in run_states(harness, child, inner).items():
            states.setdefault(key, []).extend(found)
    return states


def _plain(node_key: str) -> str:
    """A node key without its instance indices: ``loop[2].step`` → ``loop.step``."""
    return _INDEX.sub("", node_key)
