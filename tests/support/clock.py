"""A clock for the resilience layer that never waits: ``sleep`` moves time forward and records the wait."""

from __future__ import annotations

import asyncio


class FakeClock:
    """``sleep`` returns at once and moves time forward; ``sleeps`` records every wait asked for."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.now += seconds
