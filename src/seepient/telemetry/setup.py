"""Whether telemetry is on, from the standard ``OTEL_*`` variables and the ``telemetry`` settings block, and the
one switch that turns it on for this process (the SDK is imported only then)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from seepient.config.sections import TelemetrySettings
from seepient.telemetry import spans
from seepient.telemetry.redact import Redactor


@dataclass(frozen=True)
class TelemetryPlan:
    """What ``configure`` does: ``traces`` on or off, the OTLP/HTTP traces URL when the settings name one
    (otherwise the exporter reads ``OTEL_EXPORTER_OTLP_*``), and whether content may go on spans."""

    traces: bool
    traces_endpoint: str | None = None
    service_name: str | None = None
    include_content: bool = False


def plan(settings: TelemetrySettings | None, environ: Mapping[str, str]) -> TelemetryPlan:
    """Settings decide when they say; else ``OTEL_SDK_DISABLED``/``OTEL_TRACES_EXPORTER=none`` keep it off and
    an OTLP endpoint variable or ``OTEL_TRACES_EXPORTER=otlp`` turns it on, as OpenTelemetry users expect."""
    settings = settings or TelemetrySettings()
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if settings.traces is not None:
        on = settings.traces
    elif environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or exporter == "none":
        on = False
    else:
        on = exporter == "otlp" or any(
            environ.get(name, "").strip()
            for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        )
    endpoint = None
    if settings.endpoint:
        endpoint = settings.endpoint.rstrip("/") + "/v1/traces"
    return TelemetryPlan(
        traces=on,
        traces_endpoint=endpoint,
        service_name=settings.service_name,
        include_content=settings.include_content,
    )


@dataclass
class _State:
    tracing: object | None = None
    include_content: bool = False
    redact: Redactor | None = None


_state = _State()


def configure(
    settings: TelemetrySettings | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    service_name: str | None = None,
) -> bool:
    """Turn traces on for this process if the plan says so; the first call that turns them on wins (one
    exporter per process), later ones change nothing. Returns whether traces are on."""
    if spans.tracing_on():
        return True
    env = os.environ if environ is None else environ
    decided = plan(settings, env)
    if not decided.traces:
        return False
    from seepient.telemetry._otel import Tracing

    tracing = Tracing(
        service_name=decided.service_name or service_name,
        version=_version(),
        endpoint=decided.traces_endpoint,
    )
    _state.tracing = tracing
    _state.include_content = decided.include_content
    # Both the given environment and the process's own: a key may sit in either.
    _state.redact = Redactor({**os.environ, **env})
    spans.install(tracing)
    return True


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("seepient")
    except PackageNotFoundError:
        return "0"


def content(text: str | None) -> str | None:
    """``text`` as a span may carry it: ``None`` unless ``includeContent`` is set, secrets cut out always."""
    if text is None or not _state.include_content or _state.redact is None:
        return None
    return _state.redact(text)


def flush(timeout_s: float = 5.0) -> None:
    """Export every finished span now (a server shutting down, a test reading its receiver)."""
    tracing = _state.tracing
    if tracing is not None:
        tracing.flush(timeout_s)  # type: ignore[attr-defined]


def shutdown() -> None:
    """Flush, stop exporting and turn traces off again."""
    tracing, _state.tracing = _state.tracing, None
    spans.install(None)
    _state.include_content = False
    _state.redact = None
    if tracing is not None:
        tracing.shutdown()  # type: ignore[attr-defined]
