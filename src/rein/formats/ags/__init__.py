"""AGS 1.0 graphs: validation (all three layers and the advisories), planning, rendering.

    >>> from rein.formats.ags import validate_path
    >>> report = validate_path("examples/minimal.agraph.yaml")
    >>> [f.code for f in report.errors]
    []
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Loaded on first use: the engine imports this package's spec and plan modules on every
# run, and a run does not validate again (nor should it import the validator).
if TYPE_CHECKING:
    from rein.formats.ags.codes import CODES, CodeInfo
    from rein.formats.ags.report import Report
    from rein.formats.ags.validate import iter_graph_files, validate_document, validate_path

_LAZY = {
    "CODES": "rein.formats.ags.codes", "CodeInfo": "rein.formats.ags.codes",
    "Report": "rein.formats.ags.report", "iter_graph_files": "rein.formats.ags.validate",
    "validate_document": "rein.formats.ags.validate",
    "validate_path": "rein.formats.ags.validate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rein.formats.ags' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "CODES",
    "CodeInfo",
    "Report",
    "iter_graph_files",
    "validate_document",
    "validate_path",
]
