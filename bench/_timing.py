"""Small timing helpers shared by the benchmarks: repeated samples, medians and percentiles."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable


def sample(fn: Callable[[], object], *, runs: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


async def sample_async(fn: Callable[[], Awaitable[object]], *, runs: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        await fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return out


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def report(name: str, ours: list[float], raw: list[float], raw_name: str, target: str) -> str:
    o, r = median_ms(ours), median_ms(raw)
    return (
        f"{name:<34} median {o:8.3f} ms   {raw_name:<28} {r:8.3f} ms   "
        f"ratio {o / r:5.2f}×   diff {o - r:+7.3f} ms   target: {target}"
    )
