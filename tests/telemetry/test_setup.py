"""When traces are on: the standard ``OTEL_*`` variables as OpenTelemetry users expect them, the ``telemetry``
settings block over them, and secrets cut out of any content a span may carry."""

from __future__ import annotations

import pytest

from seepient.config.sections import TelemetrySettings
from seepient.telemetry import plan
from seepient.telemetry.redact import REDACTED, Redactor


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
    ],
)
def test_the_standard_variables_turn_traces_on_and_off(environ: dict[str, str], on: bool) -> None:
    assert plan(None, environ).traces is on


def test_the_settings_block_decides_over_the_environment() -> None:
    forced_off = TelemetrySettings.model_validate({"traces": False})
    assert not plan(forced_off, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}).traces
    forced_on = TelemetrySettings.model_validate({"traces": True, "endpoint": "http://collector:4318/"})
    decided = plan(forced_on, {})
    assert decided.traces and decided.traces_endpoint == "http://collector:4318/v1/traces"
    assert not decided.include_content


def test_secret_values_and_key_shapes_are_cut_out() -> None:
    redact = Redactor(
        {"OPENAI_API_KEY": "sk-live-abcdef123456", "MY_PASSWORD": "hunter22", "DEBUG": "true1x"}
    )
    text = redact("use sk-live-abcdef123456 and hunter22; also ghp_abcdefghijklmnopqrstuvwx and true1x")
    assert "sk-live" not in text and "hunter22" not in text and "ghp_" not in text
    assert text.count(REDACTED) == 3 and "true1x" in text
