"""Retry with exponential backoff and full jitter, one circuit breaker per target, and the clock both run on
(injected, so tests never wait in real time)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Literal, Protocol

from seepient.config.sections import CircuitBreakerSettings, RetrySettings
from seepient.models.base import ModelError

BreakerState = Literal["closed", "open", "half_open"]
# Client errors a retry can get past (a request timeout, a rate limit); any other 4xx says the request, the
# key or the model name is wrong, and no retry can fix that.
RETRIED_CLIENT_STATUSES = frozenset({408, 429})


class Clock(Protocol):
    """Time for the resilience layer: ``monotonic`` for intervals, ``wall`` for display, ``sleep`` to wait."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """How often one target is tried and how long to wait in between.

    The wait before attempt n+1 is drawn uniformly from [0, min(max_delay, base_delay · 2^(n-1))] ("full
    jitter": clients that failed together do not come back together). A ``Retry-After`` from the provider
    replaces the draw; one longer than ``max_delay_s`` is not waited for: the router moves on instead.
    """

    max_attempts: int = 4
    base_delay_s: float = 0.25
    max_delay_s: float = 8.0

    @classmethod
    def from_settings(cls, settings: RetrySettings) -> RetryPolicy:
        return cls(settings.max_attempts, settings.base_delay_ms / 1000, settings.max_delay_ms / 1000)

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """The jittered wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return rng.uniform(0.0, ceiling)

    def decide(self, error: ModelError, attempt: int, rng: random.Random) -> RetryDecision:
        """Whether to try the same target again after ``error`` ended attempt ``attempt``, and after what wait."""
        if not error.retryable or _is_permanent_status(error.status):
            return RetryDecision(False, 0.0, "not retryable")
        if attempt >= self.max_attempts:
            return RetryDecision(
                False, 0.0, f"{attempt} attempt(s) made, retry.maxAttempts is {self.max_attempts}"
            )
        if error.retry_after_s is not None:
            if error.retry_after_s > self.max_delay_s:
                return RetryDecision(
                    False,
                    0.0,
                    f"the provider asked to wait {error.retry_after_s:g} s, more than retry.maxDelayMs "
                    f"({self.max_delay_s * 1000:g} ms)",
                )
            return RetryDecision(True, error.retry_after_s, "Retry-After")
        return RetryDecision(True, self.backoff(attempt, rng), "backoff")


def _is_permanent_status(status: int | None) -> bool:
    return status is not None and 400 <= status < 500 and status not in RETRIED_CLIENT_STATUSES


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    delay_s: float
    reason: str


@dataclass(frozen=True)
class BreakerSnapshot:
    """What ``seepient models`` shows of one target's breaker. Times are wall-clock seconds."""

    target: str
    state: BreakerState
    failures: int
    last_error: str | None
    opened_at: float | None
    probe_after: float | None


class CircuitBreaker:
    """Closed: calls go through and consecutive transient failures are counted. At ``failure_threshold`` it
    opens: the target is skipped. After ``cooldown_s`` it is half-open: exactly one call (the probe) goes
    through; its success closes the breaker, its failure opens it again for another cool-down."""

    def __init__(self, target: str, *, failure_threshold: int, cooldown_s: float, clock: Clock) -> None:
        self.target = target
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._state: BreakerState = "closed"
        self._failures = 0
        self._last_error: str | None = None
        self._opened_mono: float | None = None
        self._opened_wall: float | None = None
        self._probing = False

    @property
    def state(self) -> BreakerState:
        if self._state == "open" and self._cooled_down():
            return "half_open"
        return self._state

    def _cooled_down(self) -> bool:
        return (
            self._opened_mono is not None and self._clock.monotonic() - self._opened_mono >= self.cooldown_s
        )

    def try_acquire(self) -> bool:
        """May a call go to this target now? A true answer in the half-open state claims the one probe."""
        if self._state == "closed":
            return True
        if self._probing or not self._cooled_down():
            return False
        self._state = "half_open"
        self._probing = True
        return True

    def record_success(self) -> None:
        self._state = "closed"
        self._failures = 0
        self._probing = False
        self._opened_mono = self._opened_wall = None

    def record_failure(self, error: str) -> None:
        """A transient failure (timeout, reset, 429, 5xx, overload): counts toward opening."""
        self._failures += 1
        self._last_error = error
        if self._state == "half_open" or self._failures >= self.failure_threshold:
            self._state = "open"
            self._opened_mono = self._clock.monotonic()
            self._opened_wall = self._clock.wall()
        self._probing = False

    def note_error(self, error: str) -> None:
        """A failure that says nothing about the target's health (a rejected request): shown, not counted."""
        self._last_error = error
        self.release()

    def release(self) -> None:
        """A call that ended without a verdict (cancelled, or refused for its own content) frees the probe."""
        self._probing = False

    @property
    def is_open(self) -> bool:
        return self._state == "open"

    def snapshot(self) -> BreakerSnapshot:
        probe_after = None
        if self._opened_wall is not None:
            probe_after = self._opened_wall + self.cooldown_s
        return BreakerSnapshot(
            target=self.target,
            state=self.state,
            failures=self._failures,
            last_error=self._last_error,
            opened_at=self._opened_wall,
            probe_after=probe_after,
        )


class BreakerBoard:
    """The breakers of one process, one per target (``provider:model``), made on first use."""

    def __init__(self, settings: CircuitBreakerSettings, clock: Clock) -> None:
        self._threshold = settings.failure_threshold
        self._cooldown_s = settings.cooldown_ms / 1000
        self._clock = clock
        self._breakers: dict[str, CircuitBreaker] = {}

    def get(self, target: str) -> CircuitBreaker:
        breaker = self._breakers.get(target)
        if breaker is None:
            breaker = CircuitBreaker(
                target, failure_threshold=self._threshold, cooldown_s=self._cooldown_s, clock=self._clock
            )
            self._breakers[target] = breaker
        return breaker

    def snapshot(self, target: str) -> BreakerSnapshot:
        return self.get(target).snapshot()

    def snapshots(self) -> list[BreakerSnapshot]:
        return [breaker.snapshot() for breaker in self._breakers.values()]
