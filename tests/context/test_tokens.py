"""Offline token estimates and their calibration by the usage a provider reports."""

from __future__ import annotations

import pytest

from seepient.context.tokens import TokenEstimator, raw_token_estimate
from seepient.protocol import Message, ToolCall, ToolSpec, Usage


def test_ascii_text_runs_about_four_characters_a_token():
    assert raw_token_estimate("") == 0
    assert raw_token_estimate("x") == 1
    prose = "The quick brown fox jumps over the lazy dog. " * 100
    assert 0.2 < raw_token_estimate(prose) / len(prose) < 0.3


def test_cjk_and_emoji_cost_about_a_token_a_character():
    cjk = "汉字是中文的书写系统" * 50
    assert 1.0 <= raw_token_estimate(cjk) / len(cjk) <= 1.2
    assert raw_token_estimate("é" * 100) > raw_token_estimate("e" * 100)


def test_messages_count_tool_calls_and_overheads():
    estimator = TokenEstimator()
    call = ToolCall(id="c1", name="read_file", arguments={"path": "src/app.py"})
    plain = estimator.message(Message.assistant("ok"))
    with_call = estimator.message(Message.assistant("ok", tool_calls=(call,)))
    assert with_call > plain > 0
    assert estimator.messages([Message.user("a" * 400)] * 3) == 3 * estimator.message(Message.user("a" * 400))
    spec = ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object"})
    assert estimator.request("system", [Message.user("hi")], [spec]) > estimator.request(
        "system", [Message.user("hi")]
    )


def test_calibration_moves_toward_what_the_provider_counted():
    estimator = TokenEstimator()
    raw = 1000
    estimator.calibrate(raw, Usage(input_tokens=1500))
    assert estimator.factor == pytest.approx(1.5)
    assert estimator.text("a" * 380) == 150
    for _ in range(20):
        estimator.calibrate(raw, Usage(input_tokens=800))
    assert estimator.factor == pytest.approx(0.8, rel=1e-3)


def test_calibration_ignores_calls_without_usage_and_stays_bounded():
    estimator = TokenEstimator()
    estimator.calibrate(1000, Usage())  # the replay model reports nothing
    estimator.calibrate(50, Usage(input_tokens=5000))  # too small to say anything
    assert (estimator.factor, estimator.observations) == (1.0, 0)
    estimator.calibrate(1000, Usage(input_tokens=10**9))
    assert estimator.factor == 4.0
