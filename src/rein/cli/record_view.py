"""``rein runs show FILE``: a run record read from a file, rendered like a stored run.

The record may come from rein (``rein runs record``) or from any other AGS harness; both
are read the same way (:mod:`rein.engine.cases.record_file`). ``--json`` keeps the shape of
``rein runs show RUN --json`` and adds the harness that wrote the record and the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from rein.cli.output import emit_json
from rein.errors import ExitCode


def show_record_file(path: Path, as_json: bool) -> int:
    """Print the record at ``path``; its findings (exit 1) when it is not a run record."""
    from rein.engine.cases.record_file import node_label, read_record

    read = read_record(path)
    if not read.ok:
        if as_json:
            emit_json({"path": str(path), "findings": [f.to_json() for f in read.findings]})
        else:
            for finding in read.findings:
                click.echo(finding.render(), err=True)
        return int(ExitCode.FAILURE)
    record = read.data
    nodes = [n for n in record.get("nodes") or [] if isinstance(n, Mapping)]
    harness = record.get("harness") or {}
    if as_json:
        emit_json({"run_id": record["run_id"], "graph_id": record["graph_id"],
                   "status": record["status"], "digest": record["graph_digest"],
                   "parent_run_id": record.get("parent_run_id"),
                   "started_at": record["started_at"],
                   "finished_at": record.get("finished_at"),
                   "nodes": [{"node": node_label(n), "type": n["type"], "status": n["status"]}
                             for n in nodes],
                   # A file carries no approval queue: what waits is a node awaiting_human.
                   "pending_approvals": [],
                   "children": [n["child_run_id"] for n in nodes if n.get("child_run_id")],
                   "harness": {k: harness[k] for k in ("name", "version", "conformance_level")},
                   "file": str(path)})
        return int(ExitCode.OK)
    click.echo(f"run     {record['run_id']} ({record['status']})")
    click.echo(f"graph   {record['graph_id']}  {record.get('graph_version', '')}".rstrip())
    click.echo(f"digest  {record['graph_digest']}")
    click.echo(f"harness {harness['name']} {harness['version']} "
               f"(level {harness['conformance_level']})  {path}")
    for n in nodes:
        click.echo(f"  {n['status']:<15} {node_label(n)} ({n['type']})")
        for line in why_lines(n):
            click.echo(f"  {'':<15}   {line}")
    for d in _diagnostics(record):
        click.echo(f"  {d}")
    return int(ExitCode.OK)


def _diagnostics(record: Mapping[str, Any]) -> list[str]:
    """Errors and warnings of the record, one line each (info is left out)."""
    out = []
    for d in record.get("diagnostics") or []:
        if d.get("severity") in ("error", "warning"):
            where = f" [{d['node_id']}]" if d.get("node_id") else ""
            out.append(f"{d['severity']} {d['code']}{where}: {d['message']}")
    return out


def why_lines(record: Any) -> list[str]:
    """For a node that did not succeed: its last attempt's error and failed criteria."""
    if not isinstance(record, dict) or record.get("status") not in ("failed", "blocked"):
        return []
    attempts = record.get("attempts") or []
    last = attempts[-1] if attempts and isinstance(attempts[-1], dict) else {}
    lines = []
    error = last.get("error") or record.get("error")
    if error:
        lines.append(f"attempt {last.get('attempt', '?')}: {error}")
    for result in (last.get("success") or {}).get("results") or []:
        if isinstance(result, dict) and result.get("passed") is False and \
                result.get("severity", "required") == "required":
            evidence = str(result.get("evidence") or result.get("error") or "")
            if len(evidence) > 160:
                evidence = evidence[:157] + "..."
            lines.append(f"criterion {result.get('id')} ({result.get('kind')}) failed: {evidence}")
    return lines
