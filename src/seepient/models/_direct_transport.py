"""The transport the model adapters' client uses for the connections it makes itself (a proxy gets httpx2's own):
keep-alive HTTP/1.1 spoken with h11 over asyncio streams. The general client's connection pool and its anyio
layers cost every step's request about a millisecond more than the exchange itself (issue #19)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import h11
import httpx2

_READ_SIZE = 64 * 1024
_MAX_IDLE_PER_ORIGIN = 8
# A connection idle longer than this is closed rather than reused (httpx's default too): a peer or a NAT between
# may have dropped it without a word, and a request sent on it would wait out the whole read timeout.
_KEEPALIVE_EXPIRY_S = 5.0
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HAPPY_EYEBALLS_DELAY_S = 0.25
# How large an answer's head may grow (h11's default is 16 KiB; a provider behind a CDN can send more), as
# httpx2's own connections allow.
_MAX_HEAD_BYTES = 100 * 1024

_Origin = tuple[str, str, int]


class _Connection:
    """One socket and the h11 state of the exchange on it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)
        self.idle_since = 0.0

    def reusable(self, now: float) -> bool:
        # A server that closed an idle connection has fed its end of file by now: such a connection would
        # fail the next request before any answer, so it is dropped rather than tried.
        return (
            not self.writer.is_closing()
            and not self.reader.at_eof()
            and now - self.idle_since < _KEEPALIVE_EXPIRY_S
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    async def send(self, event: Any, timeout: float | None) -> None:
        data = self.h11.send(event)
        if data:
            self.writer.write(data)
            async with asyncio.timeout(timeout):
                await self.writer.drain()

    async def next_event(self, timeout: float | None) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            async with asyncio.timeout(timeout):
                data = await self.reader.read(_READ_SIZE)
            self.h11.receive_data(data)


class DirectTransport(httpx2.AsyncBaseTransport):
    """Requests to each origin over pooled keep-alive connections; ``tls`` verifies https origins."""

    def __init__(self, *, tls: ssl.SSLContext | None) -> None:
        self._tls = tls
        self._idle: dict[_Origin, list[_Connection]] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.scheme.lower()
        origin = (scheme, url.host, url.port or _DEFAULT_PORTS.get(scheme, 80))
        timeouts = request.extensions.get("timeout", {})
        connection = self._take_idle(origin) or await self._connect(origin, request, timeouts.get("connect"))
        try:
            body = await request.aread()
            headers = list(request.headers.raw)
            await connection.send(
                h11.Request(method=request.method, target=url.raw_path, headers=headers),
                timeouts.get("write"),
            )
            if body:
                await connection.send(h11.Data(data=body), timeouts.get("write"))
            await connection.send(h11.EndOfMessage(), timeouts.get("write"))
            head = await connection.next_event(timeouts.get("read"))
            while isinstance(head, h11.InformationalResponse):
                head = await connection.next_event(timeouts.get("read"))
        except BaseException as exc:
            connection.close()
            _raise_mapped(exc, request, "read")
        if not isinstance(head, h11.Response):
            connection.close()
            raise httpx2.RemoteProtocolError("the server answered with no response head", request=request)
        return httpx2.Response(
            status_code=head.status_code,
            headers=head.headers.raw_items(),
            stream=_ResponseBody(self, origin, connection, request, timeouts.get("read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": head.reason},
        )

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    def _take_idle(self, origin: _Origin) -> _Connection | None:
        pool = self._idle.get(origin)
        now = time.monotonic()
        while pool:
            connection = pool.pop()
            if connection.reusable(now):
                return connection
            connection.close()
        return None

    def _give_back(self, origin: _Origin, connection: _Connection) -> None:
        pool = self._idle.setdefault(origin, [])
        connection.idle_since = now = time.monotonic()
        if len(pool) < _MAX_IDLE_PER_ORIGIN and connection.reusable(now):
            pool.append(connection)
        else:
            connection.close()

    async def _connect(self, origin: _Origin, request: httpx2.Request, timeout: float | None) -> _Connection:
        scheme, host, port = origin
        tls = self._tls if scheme == "https" else None
        if scheme == "https" and tls is None:
            raise httpx2.ConnectError(f"no TLS context to reach {host}:{port}", request=request)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=tls,
                    server_hostname=host if tls is not None else None,
                    limit=_READ_SIZE,
                    # RFC 8305: a host with a broken IPv6 route is reached over IPv4 a quarter second later,
                    # not after the whole connect timeout (httpx2's own pool races addresses too).
                    happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY_S,
                )
        except BaseException as exc:
            _raise_mapped(exc, request, "connect")
        return _Connection(reader, writer)


class _ResponseBody(httpx2.AsyncByteStream):
    """The body of one answer, read as it arrives; a body read to its end gives its connection back."""

    def __init__(
        self,
        transport: DirectTransport,
        origin: _Origin,
        connection: _Connection,
        request: httpx2.Request,
        read_timeout: float | None,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._connection: _Connection | None = connection
        self._request = request
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        try:
            while True:
                event = await connection.next_event(self._read_timeout)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    raise httpx2.RemoteProtocolError(
                        "the server closed the connection mid-answer", request=self._request
                    )
        except BaseException as exc:
            self._drop()
            _raise_mapped(exc, self._request, "read")
        self._finished(connection)

    async def aclose(self) -> None:
        self._drop()

    def _finished(self, connection: _Connection) -> None:
        self._connection = None
        state = connection.h11
        if state.our_state is h11.DONE and state.their_state is h11.DONE:
            try:
                state.start_next_cycle()
            except h11.LocalProtocolError:
                connection.close()
                return
            self._transport._give_back(self._origin, connection)
        else:
            connection.close()

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def _raise_mapped(exc: BaseException, request: httpx2.Request, phase: str) -> NoReturn:
    """Raise ``exc`` as the httpx2 error the adapters map to a ``ModelError``; an httpx2 error, a cancellation and
    anything else that is not an ``Exception`` go on as they are."""
    if isinstance(exc, httpx2.HTTPError) or not isinstance(exc, Exception):
        raise exc
    if isinstance(exc, TimeoutError):
        timeout = httpx2.ConnectTimeout if phase == "connect" else httpx2.ReadTimeout
        raise timeout(f"timed out ({phase})", request=request) from exc
    if isinstance(exc, h11.RemoteProtocolError):
        raise httpx2.RemoteProtocolError(
            str(exc) or "the server broke the HTTP exchange", request=request
        ) from exc
    if isinstance(exc, (OSError, ssl.SSLError, h11.LocalProtocolError)):
        failure = httpx2.ConnectError if phase == "connect" else httpx2.ReadError
        raise failure(str(exc) or type(exc).__name__, request=request) from exc
    raise exc
