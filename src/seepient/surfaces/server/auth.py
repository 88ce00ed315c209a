"""Bearer-token authentication for REST and WebSocket, and the per-token rate limit.

Browsers cannot set headers on a WebSocket, so a token may also arrive as the subprotocol
``bearer.<token>`` next to ``seepient.v1``; the server answers with ``seepient.v1`` only, never echoing
the token. Tokens never reach a log: uvicorn's access log prints the request line, not headers, and
nothing here formats a token into a message.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

WS_SUBPROTOCOL = "seepient.v1"
_BEARER_SUBPROTOCOL = "bearer."


@dataclass(frozen=True)
class Principal:
    name: str
    token_id: str


def bearer_from_header(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, credentials = value.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def bearer_from_subprotocols(offered: Iterable[str]) -> str | None:
    for protocol in offered:
        if protocol.startswith(_BEARER_SUBPROTOCOL) and len(protocol) > len(_BEARER_SUBPROTOCOL):
            return protocol[len(_BEARER_SUBPROTOCOL) :]
    return None


class RateLimiter:
    """A token bucket per bearer token: ``burst`` requests at once, refilled at ``rate`` per second."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str) -> float | None:
        """``None`` when the request may go ahead, else the seconds until it could."""
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (self._burst, now))
        tokens = min(self._burst, tokens + (now - last) * self._rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self._rate
        self._buckets[key] = (tokens - 1.0, now)
        return None
