"""Retry decisions and the circuit breaker's state machine, on a fake clock."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seepient.config.sections import CircuitBreakerSettings, RetrySettings
from seepient.models.base import ModelError
from seepient.models.resilience import BreakerBoard, CircuitBreaker, RetryPolicy
from tests.support.clock import FakeClock

POLICY = RetryPolicy(max_attempts=4, base_delay_s=0.25, max_delay_s=8.0)


@given(attempt=st.integers(min_value=1, max_value=40), seed=st.integers(min_value=0, max_value=2**32))
def test_backoff_is_full_jitter_under_an_exponential_ceiling(attempt, seed):
    delay = POLICY.backoff(attempt, random.Random(seed))
    assert 0.0 <= delay <= min(8.0, 0.25 * 2 ** (attempt - 1))


def test_backoff_spreads_over_the_whole_window():
    rng = random.Random(1)
    delays = [POLICY.backoff(5, rng) for _ in range(2000)]
    # Attempt 5: window [0, 4 s]. Full jitter fills it, not just its top.
    assert min(delays) < 0.2 and max(delays) > 3.8


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422, 451])
def test_client_errors_are_never_retried_even_if_flagged_retryable(status):
    decision = POLICY.decide(ModelError("x", retryable=True, status=status), 1, random.Random(0))
    assert not decision.retry


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529, None])
def test_transient_failures_are_retried_until_the_attempts_run_out(status):
    error = ModelError("x", retryable=True, status=status)
    rng = random.Random(0)
    assert [POLICY.decide(error, attempt, rng).retry for attempt in (1, 2, 3, 4)] == [True, True, True, False]
    assert "maxAttempts is 4" in POLICY.decide(error, 4, rng).reason


def test_retry_after_replaces_the_backoff_up_to_the_cap():
    rng = random.Random(0)
    assert POLICY.decide(ModelError("x", retryable=True, status=429, retry_after_s=3), 1, rng).delay_s == 3
    too_long = POLICY.decide(ModelError("x", retryable=True, status=429, retry_after_s=30), 1, rng)
    assert not too_long.retry and "30 s" in too_long.reason and "8000 ms" in too_long.reason


def test_settings_become_a_policy():
    policy = RetryPolicy.from_settings(
        RetrySettings.model_validate({"maxAttempts": 2, "baseDelayMs": 50, "maxDelayMs": 400})
    )
    assert policy == RetryPolicy(max_attempts=2, base_delay_s=0.05, max_delay_s=0.4)


def breaker(clock: FakeClock, threshold: int = 3, cooldown: float = 30) -> CircuitBreaker:
    return CircuitBreaker("p:m", failure_threshold=threshold, cooldown_s=cooldown, clock=clock)


def test_consecutive_failures_open_the_breaker_and_a_success_resets_the_count():
    clock = FakeClock()
    b = breaker(clock)
    b.record_failure("e1")
    b.record_failure("e2")
    b.record_success()
    b.record_failure("e3")
    b.record_failure("e4")
    assert b.state == "closed" and b.try_acquire()
    b.record_failure("e5")
    snapshot = b.snapshot()
    assert (snapshot.state, snapshot.failures, snapshot.last_error, snapshot.opened_at) == (
        "open",
        3,
        "e5",
        clock.now,
    )
    assert snapshot.probe_after == clock.now + 30
    assert not b.try_acquire()


def test_half_open_lets_exactly_one_probe_through():
    clock = FakeClock()
    b = breaker(clock, threshold=1)
    b.record_failure("down")
    clock.advance(29.9)
    assert b.state == "open" and not b.try_acquire()
    clock.advance(0.1)
    assert b.state == "half_open"
    assert b.try_acquire()
    assert not b.try_acquire(), "a second caller must not probe while the first does"
    b.release()
    assert b.try_acquire(), "an abandoned probe frees the slot"
    b.record_failure("still down")
    assert b.state == "open" and b.snapshot().opened_at == clock.now
    clock.advance(30)
    assert b.try_acquire()
    b.record_success()
    assert b.state == "closed" and b.snapshot().failures == 0 and b.try_acquire()


def test_errors_that_are_not_about_health_are_shown_not_counted():
    b = breaker(FakeClock(), threshold=1)
    b.note_error("400 bad schema")
    assert b.state == "closed" and b.snapshot().failures == 0 and b.snapshot().last_error == "400 bad schema"


def test_the_board_makes_one_breaker_per_target():
    board = BreakerBoard(
        CircuitBreakerSettings.model_validate({"failureThreshold": 1, "cooldownMs": 500}), FakeClock()
    )
    assert board.get("a:x") is board.get("a:x") and board.get("a:x") is not board.get("a:y")
    board.get("a:x").record_failure("boom")
    assert [(s.target, s.state) for s in board.snapshots()] == [("a:x", "open"), ("a:y", "closed")]
    assert board.get("a:x").cooldown_s == 0.5
