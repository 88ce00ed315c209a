"""An httpcore network backend that connects only to addresses validated beforehand, never to a fresh DNS
answer: what a checked host resolves to later (rebinding) cannot be reached through it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import httpcore2
from httpcore2 import AsyncNetworkBackend, AsyncNetworkStream
from httpcore2._backends.auto import AutoBackend

AddressLookup = Callable[[str], Sequence[str]]
"""``host -> addresses`` for a host written without brackets, in lower case; raises ``httpcore2.ConnectError``
for a host that may not be reached."""


class PinnedBackend(AsyncNetworkBackend):
    """Connects to the addresses ``addresses_for`` gives for the requested host, trying each in turn; Unix
    sockets are refused with ``unix_refusal``."""

    def __init__(self, addresses_for: AddressLookup, *, unix_refusal: str) -> None:
        self._addresses_for = addresses_for
        self._unix_refusal = unix_refusal
        self._inner = AutoBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        addresses = self._addresses_for(host.strip("[]").lower())
        if not addresses:
            raise httpcore2.ConnectError(f"no validated address for {host}; refusing to resolve it again")
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> AsyncNetworkStream:
        raise httpcore2.ConnectError(self._unix_refusal)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
