"""A local OTLP/HTTP collector for tests: accepts ``POST /v1/traces`` (protobuf), keeps every request's raw
bytes and headers, and decodes the spans with the official ``opentelemetry-proto`` messages."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as exported: ids in hex, attributes and event names decoded, ``service`` from its resource."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    service: str
    kind: int = 0


@dataclass
class _Store:
    bodies: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class OtlpReceiver:
    """Use as a context manager; ``endpoint`` is the base URL to give ``OTEL_EXPORTER_OTLP_ENDPOINT``."""

    def __init__(self) -> None:
        store = self._store = _Store()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server hook's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with store.lock:
                    store.bodies.append(body)
                    store.headers.append({k.lower(): v for k, v in self.headers.items()})
                ok = self.path == "/v1/traces"
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b""
                self.send_response(200 if ok else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def raw(self) -> bytes:
        """Every byte received, bodies and header values, for checks that something never left."""
        with self._store.lock:
            parts = list(self._store.bodies)
            parts += [f"{k}: {v}".encode() for h in self._store.headers for k, v in h.items()]
        return b"\n".join(parts)

    def spans(self) -> list[ReceivedSpan]:
        with self._store.lock:
            bodies = list(self._store.bodies)
        out: list[ReceivedSpan] = []
        for body in bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                service = _attributes(resource_spans.resource.attributes).get("service.name", "")
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        out.append(
                            ReceivedSpan(
                                name=span.name,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes=_attributes(span.attributes),
                                events=[(e.name, _attributes(e.attributes)) for e in span.events],
                                status_code=span.status.code,
                                service=service,
                                kind=span.kind,
                            )
                        )
        return out

    def wait_for(self, name: str, *, count: int = 1, timeout_s: float = 30.0) -> list[ReceivedSpan]:
        """The spans once at least ``count`` named ``name`` arrived (exporters batch), or what there is."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = self.spans()
            if sum(1 for s in spans if s.name == name) >= count or time.monotonic() > deadline:
                return spans
            time.sleep(0.05)


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]
