"""The model adapters' own HTTP/1.1 client, used for every endpoint no proxy stands in front of: keep-alive
connections per origin, each an asyncio protocol feeding h11, and answers handed back as ``httpx2.Response``
objects so the adapters read them (and their SSE) exactly as they read httpx2's own. The general client's request
pipeline, its connection pool and its stream layers cost a step's request about half a millisecond more than
the exchange itself (issue #19); a proxied endpoint goes through httpx2 in full (``_http.py``)."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import h11
import httpx2

from seepient._version import __version__

_MAX_IDLE_PER_ORIGIN = 8
# A connection idle longer than this is closed rather than reused (httpx's default too): a peer or a NAT between
# may have dropped it without a word, and a request sent on it would wait out the whole read timeout.
_KEEPALIVE_EXPIRY_S = 5.0
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HAPPY_EYEBALLS_DELAY_S = 0.25
# How large an answer's head may grow (h11's default is 16 KiB; a provider behind a CDN can send more), as
# httpx2's own connections allow.
_MAX_HEAD_BYTES = 100 * 1024
# Received bytes not yet parsed, past which the socket stops being read until the reader catches up: a server
# that streams faster than the adapter reads must not grow this process without bound.
_MAX_UNREAD_BYTES = 256 * 1024
# A streamed answer is read as it comes: a compressing server would hold tokens back to fill its blocks (the
# response object still decodes a coding a server applies anyway).
STREAM_REQUEST_HEADERS = {
    "Accept": "text/event-stream",
    "Cache-Control": "no-store",
    "Accept-Encoding": "identity",
    "User-Agent": f"seepient/{__version__}",
}
"""What every streamed model request says besides its adapter's own headers, through a proxy too."""
_FIXED_HEADERS = tuple(
    (name.encode("ascii"), value.encode("ascii")) for name, value in STREAM_REQUEST_HEADERS.items()
)

_Origin = tuple[str, str, int]


class _Connection(asyncio.Protocol):
    """One socket and the h11 state of the exchange on it. Received bytes wait in ``_unread`` and reach h11
    only when the reader asks for its next event, so a paused reader pauses the socket."""

    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)
        self.idle_since = 0.0
        self._transport: asyncio.Transport | None = None
        self._unread: list[bytes] = []
        self._unread_size = 0
        self._reading_paused = False
        self._at_eof = False
        self._lost = False
        self._waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._unread.append(data)
        self._unread_size += len(data)
        if self._unread_size > _MAX_UNREAD_BYTES and self._transport is not None:
            self._transport.pause_reading()
            self._reading_paused = True
        self._wake()

    def eof_received(self) -> None:
        self._at_eof = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._at_eof = self._lost = True
        self._wake()
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_exception(exc or ConnectionResetError("the connection closed while sending"))

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    # -- the exchange ------------------------------------------------------------------------------------------

    def reusable(self, now: float) -> bool:
        # A server that closed an idle connection has sent its end of file by now, and one that sent anything
        # while no request was out broke the exchange: such a connection would fail the next request before
        # any answer, so it is dropped rather than tried.
        return (
            not self._lost
            and not self._at_eof
            and not self._unread
            and self._transport is not None
            and not self._transport.is_closing()
            and now - self.idle_since < _KEEPALIVE_EXPIRY_S
        )

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    async def send(self, data: bytes, timeout: float | None) -> None:
        if self._lost or self._transport is None:
            raise ConnectionResetError("the connection closed before the request was sent")
        self._transport.write(data)
        if self._write_paused:
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await self._wait_for(self._drained, timeout)
            finally:
                self._drained = None

    async def next_event(self, timeout: float | None) -> Any:
        while True:
            event = self.next_event_received()
            if event is not h11.NEED_DATA:
                return event
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._wait_for(self._waiter, timeout)
            finally:
                self._waiter = None

    def next_event_received(self) -> Any:
        """The next event in what has arrived so far, or ``h11.NEED_DATA``."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            if self._unread:
                self._feed_unread()
            elif self._at_eof:
                # Told of the close, h11 answers ConnectionClosed or raises for a message cut short: never
                # NEED_DATA again.
                self.h11.receive_data(b"")
            else:
                return event

    def _feed_unread(self) -> None:
        data = self._unread[0] if len(self._unread) == 1 else b"".join(self._unread)
        self._unread.clear()
        self._unread_size = 0
        if self._reading_paused and self._transport is not None:
            self._reading_paused = False
            self._transport.resume_reading()
        self.h11.receive_data(data)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @staticmethod
    async def _wait_for(future: asyncio.Future[None], timeout: float | None) -> None:
        # A timer on the future rather than ``asyncio.timeout``: this runs once per chunk of every answer.
        timer = None
        if timeout is not None:
            timer = asyncio.get_running_loop().call_later(timeout, _expire, future)
        try:
            await future
        finally:
            if timer is not None:
                timer.cancel()


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class DirectTransport:
    """POSTs to each origin over pooled keep-alive connections; ``tls`` verifies https origins."""

    def __init__(self, *, tls: ssl.SSLContext | None) -> None:
        self._tls = tls
        self._idle: dict[_Origin, list[_Connection]] = {}

    async def post(
        self,
        request: httpx2.Request,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        *,
        connect_timeout: float | None,
        timeout: float | None,
    ) -> httpx2.Response:
        """Send ``body`` to ``request.url`` with ``headers`` (besides Host, Content-Length and the fixed ones)
        and give the answer once its head is in; its body is read as the caller iterates it. Failures are
        raised as the httpx2 errors the adapters map; ``request`` is what those errors name."""
        url = request.url
        scheme = url.scheme
        origin = (scheme, url.host, url.port or _DEFAULT_PORTS.get(scheme, 80))
        connection = self._take_idle(origin) or await self._connect(origin, request, connect_timeout)
        try:
            state = connection.h11
            head = h11.Request(
                method=b"POST",
                target=url.raw_path,
                headers=[
                    (b"Host", url.netloc),
                    *_FIXED_HEADERS,
                    *headers,
                    (b"Content-Length", str(len(body)).encode()),
                ],
            )
            # One write for head and body: two cost a second system call and, on a loopback socket, a second
            # wake-up of the server.
            parts = (state.send(head), state.send(h11.Data(data=body)), state.send(h11.EndOfMessage()))
            await connection.send(b"".join(part for part in parts if part), timeout)
            answer = await connection.next_event(timeout)
            while isinstance(answer, h11.InformationalResponse):
                answer = await connection.next_event(timeout)
        except BaseException as exc:
            connection.close()
            _raise_mapped(exc, request, "read")
        if not isinstance(answer, h11.Response):
            connection.close()
            raise httpx2.RemoteProtocolError("the server answered with no response head", request=request)
        return httpx2.Response(
            status_code=answer.status_code,
            headers=answer.headers.raw_items(),
            stream=_ResponseBody(self, origin, connection, request, timeout),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason},
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
                _, connection = await asyncio.get_running_loop().create_connection(
                    _Connection,
                    host,
                    port,
                    ssl=tls,
                    server_hostname=host if tls is not None else None,
                    # RFC 8305: a host with a broken IPv6 route is reached over IPv4 a quarter second later,
                    # not after the whole connect timeout (httpx2's own pool races addresses too).
                    happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY_S,
                )
        except BaseException as exc:
            _raise_mapped(exc, request, "connect")
        return connection


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
        following: Any = h11.NEED_DATA
        try:
            while True:
                event = following
                if event is h11.NEED_DATA:
                    event = await connection.next_event(self._read_timeout)
                following = h11.NEED_DATA
                if isinstance(event, h11.Data):
                    # Every chunk already here goes up as one piece: each piece costs the layers above a pass.
                    pieces = [event.data]
                    while isinstance(following := connection.next_event_received(), h11.Data):
                        pieces.append(following.data)
                    yield bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces)
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
