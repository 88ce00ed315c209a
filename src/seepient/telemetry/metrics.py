"""What the runtime, the router, the pipeline and the scheduler count. Every function is a no-op until a
process that serves ``/metrics`` calls ``enable()``; only then is ``prometheus-client`` imported."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seepient.protocol import Usage
    from seepient.telemetry.prometheus import PrometheusMetrics

_metrics: PrometheusMetrics | None = None
_BREAKER_VALUES = {"closed": 0, "half_open": 1, "open": 2}


def enable() -> PrometheusMetrics:
    """Start counting in this process (idempotent) and give back the registry's holder."""
    global _metrics
    if _metrics is None:
        from seepient.telemetry.prometheus import PrometheusMetrics

        _metrics = PrometheusMetrics()
    return _metrics


def disable() -> None:
    global _metrics
    _metrics = None


def counting() -> bool:
    return _metrics is not None


def exposition() -> tuple[bytes, str]:
    """The Prometheus text of everything counted so far, and its content type."""
    return enable().exposition()


def gauge(name: str, documentation: str, read: Callable[[], float]) -> None:
    if _metrics is not None:
        _metrics.gauge(name, documentation, read)


def turn(model: str, reason: str, usage: Usage) -> None:
    if _metrics is None:
        return
    _metrics.turns.labels(model, reason).inc()
    tokens = _metrics.tokens
    for kind, count in (
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cached_input", usage.cached_input_tokens),
        ("cache_write", usage.cache_write_input_tokens),
    ):
        if count:
            tokens.labels(model, kind).inc(count)
    if usage.cost_usd:
        _metrics.cost.labels(model).inc(usage.cost_usd)


def tool_call(tool: str, verdict: str, status: str) -> None:
    if _metrics is not None:
        _metrics.tool_calls.labels(tool, verdict, status).inc()


def approval_wait(decision: str, seconds: float) -> None:
    if _metrics is not None:
        _metrics.approval_wait.labels(decision).observe(seconds)


def execution(backend: str, seconds: float) -> None:
    if _metrics is not None:
        _metrics.execution.labels(backend).observe(seconds)


def audit_append(record: str) -> None:
    if _metrics is not None:
        _metrics.audit_appends.labels(record).inc()


def breaker(kind: str, target: str, state: str) -> None:
    if _metrics is not None:
        _metrics.breaker_state.labels(kind, target).set(_BREAKER_VALUES.get(state, -1))


def dispatch(side: str, outcome: str, seconds: float) -> None:
    if _metrics is not None:
        _metrics.dispatch.labels(side, outcome).observe(seconds)


def dispatch_refused(side: str, reason: str) -> None:
    if _metrics is not None:
        _metrics.dispatch_refusals.labels(side, reason).inc()


def failover(endpoint: str) -> None:
    if _metrics is not None:
        _metrics.failovers.labels(endpoint).inc()
