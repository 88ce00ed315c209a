"""The Prometheus metric families one Seepient process exports (``prometheus-client``), in a registry of its
own. Imported only when a server or scheduler serves ``/metrics``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

_WAIT_BUCKETS = (0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
_RUN_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 600)


class PrometheusMetrics:
    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry(auto_describe=True)
        self._gauges: dict[str, Gauge] = {}
        counter = partial(Counter, registry=registry)
        histogram = partial(Histogram, registry=registry)
        self.turns = counter("seepient_turns", "Turns by model and how they ended.", ["model", "reason"])
        self.tokens = counter("seepient_tokens", "Model tokens by model and kind.", ["model", "kind"])
        self.cost = counter("seepient_cost_usd", "Estimated model cost in US dollars.", ["model"])
        self.tool_calls = counter(
            "seepient_tool_calls",
            "Tool calls by tool, policy verdict (none: refused before policy) and status.",
            ["tool", "verdict", "status"],
        )
        self.approval_wait = histogram(
            "seepient_approval_wait_seconds",
            "Time an action waited for its approval, by answer.",
            ["decision"],
            buckets=_WAIT_BUCKETS,
        )
        self.execution = histogram(
            "seepient_execution_seconds",
            "Time an approved action took to execute, by backend.",
            ["backend"],
            buckets=_RUN_BUCKETS,
        )
        self.audit_appends = counter("seepient_audit_appends", "Audit records appended, by type.", ["record"])
        self.breaker_state = Gauge(
            "seepient_circuit_breaker_state",
            "Circuit breaker state per target: 0 closed, 1 half open, 2 open.",
            ["kind", "target"],
            registry=registry,
        )
        self.dispatch = histogram(
            "seepient_dispatch_seconds",
            "Worker dispatch latency, from receipt (scheduler) or sending (control plane) to the signed result.",
            ["side", "outcome"],
            buckets=_RUN_BUCKETS,
        )
        self.dispatch_refusals = counter(
            "seepient_dispatch_refusals", "Dispatches refused.", ["side", "reason"]
        )
        self.failovers = counter(
            "seepient_dispatch_failovers",
            "Dispatches sent to another scheduler because one could not be reached before sending.",
            ["endpoint"],
        )

    def gauge(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        """A gauge whose value is read from ``read()`` at each scrape (active sessions, streams); naming one
        again points it at the new reader (a server app built anew in the same process)."""
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = self._gauges[name] = Gauge(name, documentation, registry=self.registry)
        gauge.set_function(read)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
