"""The OpenTelemetry SDK behind ``spans``: a tracer provider of our own (never the global one, so libraries that
call the OpenTelemetry API themselves export nothing through it) with a batching OTLP/HTTP exporter.
Imported only once telemetry is on."""

from __future__ import annotations

import atexit
import logging
import sys
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from seepient.telemetry.spans import Attributes, AttributeValue

_PROPAGATOR = TraceContextTextMapPropagator()
"""traceparent/tracestate only: baggage would carry whatever a caller put in it to the peer."""
_EXIT_FLUSH_MS = 2000
"""How long a process that is ending waits for its last spans: a collector that is down must not hold up
``seepient run`` (the exporter's own retries would take ten seconds or more)."""


class _FirstExportProblem(logging.Handler):
    """The SDK's export warnings, once per process as one line on stderr: a collector that is down is worth
    saying, not a line per retry."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._said = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._said:
            return
        self._said = True
        why = str(record.args[0]) if isinstance(record.args, tuple) and record.args else record.getMessage()
        sys.stderr.write(
            f"seepient: warning: traces could not be exported ({why.splitlines()[0][:200]}); further export "
            "problems are not shown\n"
        )


def _clean(attributes: Attributes) -> dict[str, AttributeValue]:
    return {key: value for key, value in attributes.items() if value is not None}


class _OtelSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set(self, key: str, value: AttributeValue | None) -> None:
        if value is not None:
            self._span.set_attribute(key, value)

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        self._span.add_event(name, _clean(attributes or {}))

    def fail(self, error_type: str) -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, error_type))

    def end(self) -> None:
        self._span.end()


class Tracing:
    def __init__(self, *, service_name: str | None, version: str, endpoint: str | None) -> None:
        resource = Resource.create(
            {SERVICE_VERSION: version, **({SERVICE_NAME: service_name} if service_name else {})}
        )
        if resource.attributes.get(SERVICE_NAME, "").startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: "seepient"}))
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        # An endpoint from the settings wins; otherwise the exporter reads the OTEL_EXPORTER_OTLP_* variables.
        self._exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
        self.provider.add_span_processor(BatchSpanProcessor(self._exporter))
        self._tracer = self.provider.get_tracer("seepient", version)
        sdk_logs = logging.getLogger("opentelemetry")
        if not any(isinstance(handler, _FirstExportProblem) for handler in sdk_logs.handlers):
            sdk_logs.addHandler(_FirstExportProblem())
            sdk_logs.propagate = False
        atexit.register(self._at_exit)

    def _at_exit(self) -> None:
        # Bounded: the SDK's flush waits out every retry, so it runs aside and is given a moment; then the
        # exporter is stopped, which cuts short any retry still waiting.
        flusher = threading.Thread(target=self.provider.force_flush, name="seepient-trace-flush", daemon=True)
        flusher.start()
        flusher.join(_EXIT_FLUSH_MS / 1000)
        self._exporter.shutdown()

    @contextmanager
    def current(self, name: str, attributes: Attributes, parent: Any) -> Iterator[_OtelSpan]:
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            attributes=_clean(attributes),
            # Exception messages and stack traces can quote prompts, paths and keys: only the type is kept.
            record_exception=False,
            set_status_on_exception=False,
        ) as opened:
            yield _OtelSpan(opened)

    def detached(self, name: str, attributes: Attributes) -> _OtelSpan:
        return _OtelSpan(self._tracer.start_span(name, attributes=_clean(attributes)))

    def inject(self, headers: MutableMapping[str, str]) -> None:
        _PROPAGATOR.inject(headers)

    def extract(self, headers: Mapping[str, str]) -> Any:
        return _PROPAGATOR.extract(headers)

    def ids(self) -> tuple[str, str] | None:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return None
        return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)

    def flush(self, timeout_s: float) -> None:
        self.provider.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        atexit.unregister(self._at_exit)
        self.provider.shutdown()
