"""Telemetry: the run's event stream, outward, as spans (JSON, or OpenTelemetry).

The names are imported on first use: every engine asks :func:`attach` whether live export
is wanted, and a command that exports nothing need not load the span builder.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rein.telemetry.live import LiveExport, attach
    from rein.telemetry.otel import export_run
    from rein.telemetry.spans import SpanRecord, build_spans

_LAZY = {
    "LiveExport": "rein.telemetry.live",
    "SpanRecord": "rein.telemetry.spans",
    "attach": "rein.telemetry.live",
    "build_spans": "rein.telemetry.spans",
    "export_run": "rein.telemetry.otel",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rein.telemetry' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = ["LiveExport", "SpanRecord", "attach", "build_spans", "export_run"]
