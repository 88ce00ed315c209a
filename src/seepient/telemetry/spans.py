"""Spans as the rest of Seepient opens them: a no-op object until ``setup`` installs a tracer, so instrumented
code costs a function call and loads none of OpenTelemetry while telemetry is off."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, Protocol

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue | None]


class Span(Protocol):
    def set(self, key: str, value: AttributeValue | None) -> None: ...
    def event(self, name: str, attributes: Attributes | None = None) -> None: ...
    def fail(self, error_type: str) -> None: ...
    def end(self) -> None: ...


class _NoSpan:
    """What every span is while telemetry is off."""

    def set(self, key: str, value: AttributeValue | None) -> None:
        return None

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        return None

    def fail(self, error_type: str) -> None:
        return None

    def end(self) -> None:
        return None


NO_SPAN: Span = _NoSpan()


class _Tracing(Protocol):
    """What ``setup`` installs (``_otel.Tracing``): the only thing here that knows OpenTelemetry."""

    def current(self, name: str, attributes: Attributes, parent: Any) -> Any: ...
    def detached(self, name: str, attributes: Attributes) -> Span: ...
    def inject(self, headers: MutableMapping[str, str]) -> None: ...
    def extract(self, headers: Mapping[str, str]) -> Any: ...
    def ids(self) -> tuple[str, str] | None: ...


_tracing: _Tracing | None = None


def install(tracing: _Tracing | None) -> None:
    global _tracing
    _tracing = tracing


def tracing_on() -> bool:
    return _tracing is not None


@contextmanager
def span(name: str, attributes: Attributes | None = None, *, parent: Any = None) -> Iterator[Span]:
    """A span that is the current one inside the block (its children nest under it). An exception leaving the
    block marks it failed with the exception's type only: messages can quote prompts, paths or keys."""
    if _tracing is None:
        yield NO_SPAN
        return
    with _tracing.current(name, attributes or {}, parent) as opened:
        try:
            yield opened
        except BaseException as exc:
            opened.fail(type(exc).__name__)
            raise


def start_span(name: str, attributes: Attributes | None = None) -> Span:
    """A span under the current one that is never made current and is ended by ``end()``: for an async
    generator, where making a span current across ``yield`` would leak it into the consumer's context."""
    if _tracing is None:
        return NO_SPAN
    return _tracing.detached(name, attributes or {})


def inject_traceparent(headers: MutableMapping[str, str]) -> None:
    """Add the W3C ``traceparent`` (and ``tracestate``) of the current span to outgoing ``headers``."""
    if _tracing is not None:
        _tracing.inject(headers)


def remote_parent(headers: Mapping[str, str]) -> Any:
    """The context a peer's ``traceparent`` names, to continue its trace (``None`` when off or absent)."""
    if _tracing is None:
        return None
    return _tracing.extract(headers)


def current_ids() -> tuple[str, str] | None:
    """``(trace_id, span_id)`` in hex of the current span, for log lines; ``None`` when there is none."""
    return None if _tracing is None else _tracing.ids()
