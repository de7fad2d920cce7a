"""Telemetry: the run's event stream, outward (OpenTelemetry spans)."""

from __future__ import annotations

from rein.telemetry.otel import export_run

__all__ = ["export_run"]
