"""Validate AGS 1.0 documents: load → schema → scopes → topology → nodes → expressions.

Unlike the reference validator, a schema error does not stop the pipeline: every later check
reads the document defensively (wrong-typed parts are skipped, layer 1 has reported them), so
one run shows the author everything that is wrong, including the referential codes that
only make sense once the structure is known (AG101, AG102, AG104 get their own codes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rein.errors import DocumentError, LoadError, Location
from rein.formats.ags.nodes import check_nodes
from rein.formats.ags.recursion import check_fragment_recursion, check_ref_recursion
from rein.formats.ags.report import Collector, Report
from rein.formats.ags.schema import check_schema, check_version
from rein.formats.ags.scopes import build_scopes, dict_of
from rein.formats.ags.semantic import Semantics
from rein.formats.ags.topology import analyse
from rein.formats.canonical import ags_digest
from rein.formats.loader import (
    DEFAULT_LIMITS,
    Document,
    LoadLimits,
    format_for,
    load_bytes,
    load_path,
)

GRAPH_SUFFIXES = (".agraph.yaml", ".agraph.yml", ".agraph.json")


def iter_graph_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; folders searched recursively for ``*.agraph.{yaml,yml,json}``, sorted."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*")
                                if q.name.endswith(GRAPH_SUFFIXES) and q.is_file()))
        else:
            found.append(p)
    return found


def validate_path(path: str | Path, *, limits: LoadLimits = DEFAULT_LIMITS,
                  resolve_refs: bool = True, raw: bytes | None = None) -> Report:
    """Load and validate one file. An unreadable file is a report with one finding.
    ``raw``: the file's bytes, read by the caller, who binds what it shows to them."""
    source = str(path)
    try:
        document = load_path(path, limits=limits) if raw is None else \
            load_bytes(raw, source=source, format=format_for(path), limits=limits)
    except LoadError as exc:
        out = Collector(None, source)
        code = "AG005" if exc.kind == "duplicate_key" else "AG001"
        location = exc.location or Location(file=source)
        hint = exc.hint or ("fix the text at this line and column: a graph is one JSON "
                            "object, written as JSON or YAML 1.2")
        out.add(code, location.pointer or "", exc.message, hint=hint, location=location)
        return Report(path=source, kind="unknown", digest=None, findings=out.findings(),
                      document=None)
    return _validate(document, resolve_refs=resolve_refs, limits=limits)


def validate_document(doc: Document, *, resolve_refs: bool = True) -> Report:
    """Validate a loaded document. ``resolve_refs`` follows ``subgraph.ref`` files (AG131)."""
    return _validate(doc, resolve_refs=resolve_refs, limits=DEFAULT_LIMITS)


def _validate(doc: Document, *, resolve_refs: bool, limits: LoadLimits) -> Report:
    out = Collector(doc, doc.source)
    data = doc.data
    digest: str | None = None
    try:
        digest = ags_digest(data)
    except DocumentError as exc:
        if not _is_unicode(data):
            # A JSON escape such as "\ud800" decodes to half a character: no schema
            # validator, digest or terminal can handle the text, so nothing else is checked.
            out.add("AG001", "", "the document contains an escaped lone surrogate (such as "
                    "\\ud800), which is not Unicode text",
                    hint="replace the escape with the character it was meant to be")
            return Report(path=doc.source, kind="AgenticGraph", digest=None,
                          findings=out.findings(), document=doc)
        out.add("AG001", "", exc.message, hint=exc.hint)
    if not isinstance(data, dict):
        out.add("AG001", "", f"the document must be a JSON object (a mapping), not "
                f"{_kind_of(data)}", hint="start the file with the graph's fields, such as "
                "ags_version: \"1.0\"")
    else:
        _check(data, doc, out, resolve_refs=resolve_refs, limits=limits)
    return Report(path=doc.source, kind="AgenticGraph", digest=digest,
                  findings=out.findings(), document=doc)


def _check(data: dict[str, Any], doc: Document, out: Collector, *, resolve_refs: bool,
           limits: LoadLimits) -> None:
    check_schema(data, out)
    check_version(data, out)
    model = build_scopes(data, out)
    check_fragment_recursion(model, out)
    if resolve_refs:
        check_ref_recursion(model, doc.source, out, limits)
    topologies = {scope.pointer: analyse(scope, out) for scope in model.scopes}
    for scope in model.scopes:
        check_nodes(model, scope, out)
    Semantics(model, topologies, out).run()
    _check_cost_preview(data, model.scopes, out)


def _check_cost_preview(data: dict[str, Any], scopes: list[Any], out: Collector) -> None:
    """AG908: without a cost ceiling or any estimate, nobody can preview what a run costs."""
    if "max_cost_usd" in dict_of(data.get("constraints")):
        return
    if any(node.get("estimate") for scope in scopes for node in scope.nodes.values()):
        return
    out.add("AG908", "/constraints" if "constraints" in data else "",
            "the graph has neither constraints.max_cost_usd nor an estimate on any node, so "
            "its cost cannot be previewed")


def _is_unicode(data: Any) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except (TypeError, ValueError):
        pass
    return True


def _kind_of(value: Any) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__} scalar"
