"""Telemetry: the run's event stream, outward, as spans (JSON, or OpenTelemetry)."""

from __future__ import annotations

from rein.telemetry.live import LiveExport, attach
from rein.telemetry.otel import export_run
from rein.telemetry.spans import SpanRecord, build_spans

__all__ = ["LiveExport", "SpanRecord", "attach", "build_spans", "export_run"]
