"""Spans through the OpenTelemetry SDK: after the fact (:func:`export_run`) and the exporter
the standard environment names.

Optional: needs the ``otel`` extra (``opentelemetry-sdk``); OTLP needs
``opentelemetry-exporter-otlp`` as well. The spans are :class:`rein.telemetry.spans.SpanRecord`
values turned into the SDK's ``ReadableSpan`` with rein's own ids (derived from the run, so a
trace exported twice, or live and then after the fact, names the same spans), and handed to
an exporter or a span processor. Usage::

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from rein.telemetry import export_run

    export_run(store, "run-...", exporter=InMemorySpanExporter())

Which exporter the environment asks for (:func:`exporter_from_env`) follows the SDK's
variables: ``OTEL_TRACES_EXPORTER`` (``otlp``, the default, or ``console``),
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and
``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``, the default, or ``grpc``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rein.errors import ConfigError

if TYPE_CHECKING:
    from rein.store.base import Store
    from rein.telemetry.spans import SpanRecord

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def sdk_missing() -> ConfigError:
    """The error for an export asked for without the SDK installed."""
    from rein.core.extras import install_hint

    return ConfigError("OpenTelemetry export needs the opentelemetry-sdk package",
                       code="OTEL_MISSING", hint=install_hint("otel"))


def have_sdk() -> bool:
    """Whether the OpenTelemetry SDK can be imported."""
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def wanted(env: Mapping[str, str]) -> bool:
    """Whether the environment asks for trace export (an OTLP endpoint, or ``console``)."""
    kind = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if kind == "none":
        return False
    return kind == "console" or any(env.get(name) for name in ENDPOINT_VARS)


def exporter_from_env(env: Mapping[str, str]) -> Any:
    """The SDK span exporter the environment names; :class:`ConfigError` when it cannot be
    made (no SDK, the OTLP package missing, nothing configured, an unknown exporter)."""
    if not have_sdk():
        raise sdk_missing()
    kind = (env.get("OTEL_TRACES_EXPORTER") or "otlp").strip().lower()
    if kind == "console":
        import sys

        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)  # stdout belongs to the command's output
    if kind != "otlp":
        raise ConfigError(f"OTEL_TRACES_EXPORTER={kind!r} is not an exporter rein can use",
                          code="OTEL_EXPORTER", hint="set it to otlp or console")
    if not any(env.get(name) for name in ENDPOINT_VARS):
        raise ConfigError("no OpenTelemetry endpoint is configured", code="OTEL_ENDPOINT",
                          hint="export OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 "
                               "(or OTEL_TRACES_EXPORTER=console to print the spans)")
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    grpc = protocol == "grpc"
    try:
        if grpc:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if grpc else "http")
        raise ConfigError(
            f"OTLP export ({protocol}) needs the {package} package, which is not installed",
            code="OTEL_OTLP_MISSING",
            hint="pip install opentelemetry-exporter-otlp, or set OTEL_TRACES_EXPORTER=console"
        ) from exc
    return OTLPSpanExporter()


def resource() -> Any:
    """The resource of rein's spans: ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``
    as the SDK reads them, and ``service.name = rein`` when neither names the service."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    made = Resource.create()
    if str(made.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        made = made.merge(Resource({SERVICE_NAME: "rein"}))
    return made


def readable(span: SpanRecord, *, res: Any = None, end: str | None = None) -> Any:
    """``span`` as the SDK's ``ReadableSpan`` (ids as given; ``end`` for an open span)."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, TraceFlags
    from opentelemetry.trace.status import Status, StatusCode

    from rein.core.version import VERSION

    def context(sid: str, trace: str | None = None) -> SpanContext:
        return SpanContext(trace_id=int(trace or span.trace_id, 16), span_id=int(sid, 16),
                           is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    code = {"ok": StatusCode.OK, "error": StatusCode.ERROR}.get(span.status, StatusCode.UNSET)
    attributes = {k: v for k, v in span.attributes.items() if v is not None}
    finish = span.end or end or span.start
    if span.end is None:
        attributes["rein.open"] = True  # not ended in the stream yet: ends at the last event
    return ReadableSpan(
        name=span.name, context=context(span.span_id),
        parent=None if span.parent_span_id is None else context(span.parent_span_id),
        resource=res if res is not None else resource(), attributes=attributes,
        status=Status(code, span.status_message if code is StatusCode.ERROR else None),
        start_time=nanos(span.start), end_time=nanos(finish),
        events=[Event(e.name, dict(e.attributes), nanos(e.at)) for e in span.events],
        links=[Link(context(sid, trace)) for trace, sid in span.links],
        instrumentation_scope=InstrumentationScope("rein", VERSION))


def nanos(at: str) -> int:
    """An event time as nanoseconds since the epoch."""
    stamp = dt.datetime.fromisoformat(at)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1_000


def send(spans: Iterable[SpanRecord], *, exporter: Any = None, processor: Any = None) -> int:
    """Hand spans to an SDK exporter (one batch) or span processor; returns how many."""
    if (exporter is None) == (processor is None):
        raise ValueError("give exactly one of exporter= and processor=")
    spans = list(spans)
    last = max((s.end or s.start for s in spans), default=None)
    res = resource()
    made = [readable(s, res=res, end=last) for s in spans]
    if exporter is not None:
        if made:
            exporter.export(made)
    else:
        for span in made:
            processor.on_end(span)
    return len(made)


def export_run(store: Store, run_id: str, *, exporter: Any = None, processor: Any = None
               ) -> int:
    """Send the spans of run ``run_id`` (and its child runs); returns how many were sent.

    Spans still open (the run waits, or its rein died) end at the run's last event and
    carry ``rein.open = true``.
    """
    if not have_sdk():
        raise sdk_missing()
    from rein.telemetry.spans import build_spans

    return send(build_spans(store, run_id), exporter=exporter, processor=processor)
