"""Traces (OpenTelemetry, OTLP/HTTP) and metrics for every step of a turn. Off by default and then a no-op:
nothing here loads the OpenTelemetry SDK until ``configure`` turns traces on."""

from seepient.telemetry import metrics
from seepient.telemetry.logs import log_event, use_json_logs
from seepient.telemetry.setup import TelemetryPlan, configure, content, flush, plan, shutdown
from seepient.telemetry.spans import (
    NO_SPAN,
    Span,
    current_ids,
    inject_traceparent,
    remote_parent,
    span,
    start_span,
)

__all__ = [
    "NO_SPAN",
    "Span",
    "TelemetryPlan",
    "configure",
    "content",
    "current_ids",
    "flush",
    "metrics",
    "use_json_logs",
    "inject_traceparent",
    "log_event",
    "plan",
    "remote_parent",
    "shutdown",
    "span",
    "start_span",
]
