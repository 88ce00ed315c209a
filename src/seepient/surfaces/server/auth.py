"""Bearer-token authentication for REST and WebSocket, and the per-token rate limit.

Browsers cannot set headers on a WebSocket, so a token may also arrive as the subprotocol
``bearer.<token>`` next to ``seepient.v1``; the server answers with ``seepient.v1`` only, never echoing
the token. Tokens never reach a log: uvicorn's access log prints the request line, not headers, and
nothing here formats a token into a message.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
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


class TokenCache:
    """Remembers tokens that authenticated, for ``ttl_s`` seconds, so a burst of connections (two hundred clients
    opening their sockets at once) costs one database read per token rather than one per request.

    Only successes are kept, keyed by the token's SHA-256, and never longer than ``ttl_s``: a token revoked in
    the store (by any process or replica) stops working within that time. The cache is bounded; the oldest
    entry leaves first."""

    def __init__(
        self, lookup: Callable[[str], Awaitable[tuple[str, str] | None]], *, ttl_s: float = 5.0
    ) -> None:
        self._lookup = lookup
        self._ttl = ttl_s
        self._entries: OrderedDict[str, tuple[float, tuple[str, str]]] = OrderedDict()
        self._pending: dict[str, asyncio.Future[tuple[str, str] | None]] = {}

    async def authenticate(self, secret: str) -> tuple[str, str] | None:
        key = hashlib.sha256(secret.encode("utf-8")).hexdigest()
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None and now - entry[0] < self._ttl:
            return entry[1]
        # Requests that arrive together for the same token share one lookup.
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = asyncio.ensure_future(self._lookup(secret))
            pending.add_done_callback(lambda _: self._pending.pop(key, None))
        found = await asyncio.shield(pending)
        if found is None:
            self._entries.pop(key, None)
            return None
        self._entries[key] = (now, found)
        self._entries.move_to_end(key)
        while len(self._entries) > _CACHED_TOKENS:
            self._entries.popitem(last=False)
        return found


_CACHED_TOKENS = 4096


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
