"""AGS 1.0 graphs: validation (all three layers and the advisories), planning, rendering.

    >>> from rein.formats.ags import validate_path
    >>> report = validate_path("examples/minimal.agraph.yaml")
    >>> [f.code for f in report.errors]
    []
"""

from __future__ import annotations

from rein.formats.ags.codes import CODES, CodeInfo
from rein.formats.ags.report import Report
from rein.formats.ags.validate import iter_graph_files, validate_document, validate_path

__all__ = [
    "CODES",
    "CodeInfo",
    "Report",
    "iter_graph_files",
    "validate_document",
    "validate_path",
]
