"""Live export: an engine listener that sends each span when the event ending it happens.

Turned on by ``[telemetry] otel = true`` in ``rein.toml`` or by the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_TRACES_EXPORTER=console``) environment, when the
SDK is installed; the engine flushes it at the end of each advance of a run. It feeds the
same :class:`rein.telemetry.spans.RunTrace` that ``rein runs trace`` uses, so the ids are the
ones any process derives from the run: a run this process continues after a pause or a
crash is primed from the stored events first, and the spans it ends here (the run's, a
node's that started in the earlier process) carry the ids and start times that process
gave them. A span is sent once, by the process that sees it end.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.errors import ConfigError
from rein.telemetry import otel

if TYPE_CHECKING:
    from rein.store.base import Event, Store
    from rein.telemetry.spans import RunTrace

FLUSH_MILLIS = 5_000


class LiveExport:
    """An engine listener: events in, ended spans out to an SDK span processor."""

    def __init__(self, store: Store, processor: Any) -> None:
        self.store = store
        self.processor = processor
        self.traces: dict[str, RunTrace] = {}
        self.sent = 0
        self.failures: list[str] = []  # spans the processor refused (the run went on)
        self._resource = otel.resource()

    def __call__(self, event: Event) -> None:
        trace = self._trace(str(event.run_id), before=event.seq)
        for span in trace.feed(event):
            try:
                self.processor.on_end(otel.readable(span, res=self._resource))
            except Exception as exc:  # noqa: BLE001 - a trace exporter must not stop the run
                self.failures.append(f"{span.label or span.name}: {exc}")
            else:
                self.sent += 1

    def flush(self) -> None:
        """Push what the processor holds to its exporter (the end of an advance), waiting
        at most :data:`FLUSH_MILLIS` for a slow or absent collector."""
        self.processor.force_flush(FLUSH_MILLIS)

    def shutdown(self) -> None:
        self.processor.shutdown()

    def _trace(self, run_id: str, *, before: int) -> RunTrace:
        known = self.traces.get(run_id)
        if known is not None:
            return known
        from rein.store.lineage import top_run_id
        from rein.telemetry.spans import RunTrace, conversation, trace_id

        run = self.store.get_run(run_id)
        if run is None:  # cannot happen for a published event; keep the stream going
            trace = RunTrace(run_id=run_id, graph_id="", trace_id=trace_id(run_id))
        else:
            parent = None
            if run.parent_run_id is not None:
                parent = self._trace(str(run.parent_run_id), before=1 << 62).node_span_id(
                    str(run.parent_node_key))
            trace = RunTrace(run_id=run.run_id, graph_id=run.graph_id,
                             trace_id=trace_id(top_run_id(self.store, run.run_id)),
                             parent_span_id=parent, conversation=conversation(self.store, run))
            # What happened before this process saw the run: spans ended then were sent
            # by the process that ended them; the open ones continue here.
            for earlier in self.store.events(run.run_id):
                if earlier.seq >= before:
                    break
                trace.feed(earlier)
        self.traces[run_id] = trace
        return trace


def enabled(workspace: Path, env: Mapping[str, str], config: Any = None) -> bool:
    """Whether live export is asked for: the environment, or ``[telemetry] otel``
    (of ``config``, the merged ``rein.toml`` already loaded, else read here)."""
    if otel.wanted(env):
        return True
    if config is None:
        from rein.config.files import config_paths

        if not any(path.is_file() for _, path in config_paths(workspace, env)):
            return False  # no rein.toml anywhere: skip the configuration machinery
        from rein.config import load_config

        config = load_config(workspace, env=env)
    section = config.get("telemetry", {})
    return isinstance(section, Mapping) and section.get("otel") is True


def attach(engine: Any, *, processor: Any = None) -> LiveExport | None:
    """Add a :class:`LiveExport` to ``engine.listeners`` when asked for (once per engine).

    ``processor`` replaces the one built from the environment (tests pass an in-memory
    exporter's). Asked for without the SDK: :class:`ConfigError` when ``rein.toml`` asked,
    nothing when only the environment did (it may be set for other programs).
    """
    for listener in engine.listeners:
        if isinstance(listener, LiveExport):
            return listener
    if processor is None:
        env = engine.env
        if not enabled(engine.workspace, env, getattr(engine, "config", None)):
            return None
        if not otel.have_sdk():
            if otel.wanted(env):
                return None
            from rein.core.extras import install_hint

            raise ConfigError(
                "rein.toml asks for OpenTelemetry export ([telemetry] otel = true), but the "
                "opentelemetry-sdk package is not installed", code="OTEL_MISSING",
                hint=f"{install_hint('otel')}, or remove [telemetry] otel")
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        processor = BatchSpanProcessor(otel.exporter_from_env(env))
    live = LiveExport(engine.store, processor)
    engine.listeners.append(live)
    return live

