"""JSON log lines: one event a line, the event's own fields as keys (a field named like a log record attribute
kept under ``NAME_``), and the trace and span ids of the span current when it was logged."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from seepient import telemetry
from seepient.config.sections import TelemetrySettings
from seepient.telemetry.logs import JsonLines
from tests.support.otlp_receiver import OtlpReceiver


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("seepient.test-json")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def test_a_line_is_the_event_and_its_fields(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    telemetry.log_event(logger, "dispatch_refused", {"reason": "replayed", "message": "seen", "args": 1})
    line = json.loads(stream.getvalue())
    assert line["event"] == "dispatch_refused" and line["level"] == "info" and line["reason"] == "replayed"
    assert line["message_"] == "seen" and line["args_"] == 1
    assert "trace_id" not in line


def test_a_line_logged_inside_a_span_names_its_trace(
    captured: tuple[logging.Logger, io.StringIO], otlp_receiver: OtlpReceiver
) -> None:
    logger, stream = captured
    assert telemetry.configure(TelemetrySettings(traces=True, endpoint=otlp_receiver.endpoint), environ={})
    try:
        with telemetry.span("seepient.test"):
            telemetry.log_event(logger, "inside", {})
        telemetry.flush()
    finally:
        telemetry.shutdown()
    line = json.loads(stream.getvalue())
    exported = next(s for s in otlp_receiver.spans() if s.name == "seepient.test")
    assert (line["trace_id"], line["span_id"]) == (exported.trace_id, exported.span_id)
