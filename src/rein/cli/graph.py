"""``rein graph``: validate, plan and digest Agentic Graphs (AGS 1.0).

The validator, the planner and the renderers are imported inside each command, so that
``rein --help`` never pays for them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rein.cli.output import emit_json, json_option, validation_exit_code
from rein.cli.quick.validate import finding_text as _render_finding
from rein.cli.quick.validate import reports_text
from rein.cli.workspace import open_harness, resolve_workspace, workspace_option
from rein.errors import ExitCode, ReinError

if TYPE_CHECKING:
    from rein.cli.approval_shown import Binding
    from rein.formats.ags.report import Report
    from rein.formats.loader import LoadLimits

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group("graph", context_settings=_CONTEXT)
def graph() -> None:
    """Validate, plan and digest Agentic Graphs (AGS 1.0).

    \b
    Example:
      rein graph validate --strict examples/
      rein graph plan examples/release-train.agraph.yaml
      rein graph digest examples/release-train.agraph.yaml

    \b
    Exit codes: 0 ok, 1 errors found, 2 warnings under --strict, 64 usage error
    (each command's --help says which it uses).
    """


@graph.command("validate", context_settings=_CONTEXT,
               epilog="Exit codes: 0 clean, 1 errors (unreadable files included) or no "
                      "graph found, 2 warnings under --strict, 64 usage error.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--strict", is_flag=True, help="Treat advisory warnings (AG9xx) as failures.")
@json_option
def validate(paths: tuple[str, ...], strict: bool, as_json: bool) -> int:
    """Check graph files, or folders of *.agraph.yaml / *.agraph.json files.

    Every finding has a stable code, a location (file:line:column and a JSON Pointer) and,
    where rein knows one, a fix.

    \b
    Example:
      rein graph validate examples/no-worker.agraph.yaml
      rein graph validate --strict --json examples/
    """
    reports = _validate_all(paths)
    if not reports:
        # A folder without graph files is almost always the wrong folder: say so.
        if as_json:
            emit_json({"documents": []})
        click.echo(f"error: no *.agraph.yaml or *.agraph.json files in {', '.join(paths)}",
                   err=True)
        return int(ExitCode.FAILURE)
    if as_json:
        emit_json({"documents": [r.to_json() for r in reports]})
    else:
        _print_reports(reports)
    return validation_exit_code(failed=any(r.errors for r in reports),
                                warned=any(r.warnings for r in reports), strict=strict)


@graph.command("plan", context_settings=_CONTEXT,
               epilog="Exit codes: 0 planned, 1 the document has errors (nothing is planned), "
                      "4 --format svg without Graphviz, 64 usage error.")
@click.argument("path", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "dot", "svg"]),
              default="text", show_default=True,
              help="How to show the plan: text for review, or a picture (Mermaid, Graphviz "
                   "DOT, or SVG drawn by Graphviz's dot).")
@workspace_option
@json_option
def plan(path: str, fmt: str, workspace: Path | None, as_json: bool) -> int:
    """Show what a graph will do before it runs: order, parallel groups, tiers, gates,
    criteria, budgets, the worst-case number of node executions, and notices.

    A document with validation errors is refused and its findings are printed. Notices are
    facts worth a reviewer's attention that are not defects (for example a worst case
    above constraints.max_node_executions); they never change the exit code.

    The file is drawn as it is when read. Where a pending approval of the workspace binds
    this file, the command says so on stderr, with the digest of the bytes it drew: that
    the approval asks to accept exactly them, or (warning APPROVAL008) that it binds other
    content, and that `rein approvals show ID` draws the content it binds.

    The pictures shape and colour nodes by kind, label each arrow with the branch it
    stands for, and carry a legend. SVG needs Graphviz (`dot`); without it the command
    says how to get it and exits 4.

    \b
    Example:
      rein graph plan examples/no-worker.agraph.yaml
      rein graph plan --format mermaid examples/release-train.agraph.yaml > plan.mmd
      rein graph plan --format svg examples/release-train.agraph.yaml > plan.svg
      rein graph plan --json examples/no-worker.agraph.yaml | jq .worst_case_executions
    """
    if as_json and fmt != "text":
        raise click.UsageError("--json prints the plan as data; leave out --format")
    from rein.formats.ags import validate_path
    from rein.formats.ags.plan import build_plan

    limits = _limits()
    raw = _read(path, limits)
    report = validate_path(path, limits=limits, raw=raw)
    if report.errors or report.document is None or raw is None:
        if as_json:
            emit_json({"documents": [report.to_json()]})
        else:
            _print_reports([report])
            click.echo("error: the graph has errors, so it cannot be planned", err=True)
        return int(ExitCode.FAILURE)
    result = build_plan(report.document.data, source=path, digest=report.digest,
                        key_variables=_key_variables())
    content = "sha256:" + hashlib.sha256(raw).hexdigest()
    bound, unchecked = _approvals_of(path, workspace, content=content, graph=report.digest)
    if as_json:
        out = result.to_json()
        out["findings"] = [f.to_json() for f in report.findings]
        out["content_digest"] = content
        out["approvals"] = [b.to_json() for b in bound]
        if unchecked:
            out["approvals_unchecked"] = unchecked
        emit_json(out)
        return int(ExitCode.OK)
    for finding in report.findings:
        click.echo(_render_finding(finding), err=True)
    if fmt == "text":
        from rein.formats.ags.render import render_text

        drawn = render_text(result)
    else:
        from rein.cli.pictures import draw

        drawn = draw(result, fmt)
    click.echo(drawn, nl=False)
    _say_approvals(path, bound, unchecked, content)  # last: what a person reads before deciding
    return int(ExitCode.OK)


def _read(path: str, limits: LoadLimits) -> bytes | None:
    """The file's bytes, read once: what is drawn and the digest said of it are of the same
    bytes (None: unreadable; the validator reports why)."""
    from rein.formats.loader import read_limited

    try:
        return read_limited(path, limits.max_bytes)
    except ReinError:
        return None


def _approvals_of(path: str, workspace: Path | None, *, content: str,
                  graph: str | None) -> tuple[list[Binding], str | None]:
    """The pending approvals of the workspace that bind this file, and why they could not
    be read, if they could not (a workspace without a run store has none)."""
    from rein.cli.approval_shown import bindings

    root = resolve_workspace(workspace)
    try:
        with open_harness(root, create=False) as harness:
            rows = harness.approvals(pending_only=True)
    except ReinError as exc:
        return [], None if exc.code == "STORE404" else f"{exc.code}: {exc.message}"
    return bindings(rows, root, Path(path), content=content, graph=graph), None


def _say_approvals(path: str, bound: Sequence[Binding], unchecked: str | None,
                   content: str) -> None:
    """On stderr (stdout is the plan or the picture): what the pending approvals that bind
    this file ask to accept, against the bytes drawn."""
    from rein.cli.approval_shown import binding_text

    if unchecked is not None:
        click.echo(f"note: the approvals of this workspace could not be read ({unchecked}): "
                   "whether one binds this file is not known", err=True)
    if bound:
        click.echo(f"{path}: drawn from content {content}", err=True)
    for binding in bound:
        click.echo(binding_text(binding, path), err=True)


def _key_variables() -> tuple[str, ...]:
    """The provider key variables the current directory's rein.toml names (flagged in the
    plan, PLAN009); a rein.toml that cannot be read leaves only the built-in ones."""
    from rein.engine.service import Harness

    try:
        return Harness.open(Path.cwd()).key_variables()
    except ReinError:
        return ()


@graph.command("digest", context_settings=_CONTEXT,
               epilog="Exit codes: 0 ok, 1 the file cannot be read or parsed, 64 usage error.")
@click.argument("path", type=click.Path())
@json_option
def digest(path: str, as_json: bool) -> int:
    """Print the graph digest (AGS §3.3: sha256- and base64 over RFC 8785 JSON).

    Comments and formatting do not change it, and the YAML and JSON forms of one graph have
    the same digest. Approvals bind to this value. (Profiles, approval material and files
    use the other notation, sha256: and hex; see docs/concepts.md.)

    \b
    Example:
      rein graph digest examples/no-worker.agraph.yaml
      rein graph digest --json examples/no-worker.agraph.yaml
    """
    from rein.formats.canonical import ags_digest
    from rein.formats.loader import load_path

    data = load_path(path, limits=_limits()).data
    if not isinstance(data, dict):  # an approval of the digest of nothing approves nothing
        from rein.errors import DocumentError, Location

        what = {list: "an array", str: "a string", bool: "a boolean"}.get(
            type(data), "an empty document" if data is None else "a number")
        raise DocumentError(f"the document must be a JSON object (a mapping), not {what}",
                            code="AG001", location=Location(file=path, pointer=""),
                            hint='start the file with the graph\'s fields, such as '
                                 'ags_version: "1.0"')
    value = ags_digest(data)
    if as_json:
        emit_json({"path": path, "digest": value})
    else:
        click.echo(value)
    return int(ExitCode.OK)


# ---------------------------------------------------------------------------- helpers


def _validate_all(paths: Sequence[str]) -> list[Report]:
    from rein.formats.ags import iter_graph_files, validate_path

    limits = _limits()
    return [validate_path(p, limits=limits) for p in iter_graph_files(paths)]


def _limits() -> LoadLimits:
    """The loader's limits of the current directory's rein.toml (and the user's)."""
    from rein.config import loader_limits

    return loader_limits(Path.cwd())


def _print_reports(reports: Sequence[Report]) -> None:
    click.echo(reports_text(reports))
