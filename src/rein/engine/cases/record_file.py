"""Reading an AGS run record from a file, whoever wrote it (rein or another harness).

A record is portable (AGS run schema ``agentic-graph-run-1.0``): it is checked against the
normative schema from the installed ``agentic-graph-spec`` package and nothing else, so a
record another harness wrote is read exactly as one of rein's. Unknown ``x-`` members and
harness fields are kept as they are. What cannot be read comes back as findings with a
location (file, line, JSON Pointer), never as a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, field
from rein.errors import Finding, LoadError, Location
from rein.formats.loader import load_path

NOT_A_RECORD = "RECORD001"  # the file is not a valid AGS run record (schema violation)
_HINT = ("give a run record (agentic-graph-run-1.0, e.g. from `rein runs record RUN`), or a "
         "run id")


class RecordFile(Frozen):
    """A run record read from ``path``: its data, or the findings that stop it."""

    path: str
    data: Mapping[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings


def read_record(path: str | Path) -> RecordFile:
    """Load ``path`` and check it against the AGS run schema."""
    from rein.engine.run.record import run_validator
    from rein.formats.jsonschemas import errors

    source = str(path)
    try:
        doc = load_path(path)
    except LoadError as exc:
        return RecordFile(path=source, findings=(exc.to_finding(),))
    findings = []
    for error in errors(run_validator(), doc.data):
        pointer = "".join(f"/{_escape(str(t))}" for t in error.instance_path)
        where = doc.locate(pointer)
        findings.append(Finding(
            code=NOT_A_RECORD, severity="error", hint=_HINT,
            message=f"not an AGS run record: {pointer or '/'}: {error.message}",
            location=Location(file=where.file or source, line=where.line,
                              column=where.column, pointer=pointer or None)))
    if findings:
        return RecordFile(path=source, findings=tuple(findings))
    return RecordFile(path=source, data=doc.data)


def node_label(node: Mapping[str, Any]) -> str:
    """A node of a record as rein names it: its scope path when nested, else its id."""
    return str(node.get("scope_path") or node.get("node_id"))


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
