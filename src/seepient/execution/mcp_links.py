"""The MCP SDK's transports opened as links (``McpLink``): a stdio server's process with its error output kept,
or a streamable-HTTP connection pinned to the addresses checked when it was opened. ``mcp_transport.py``
decides what may start; this module, and the SDK with it, loads only when a server does."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpcore2
import httpx2
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from seepient.net.pinned_backend import PinnedBackend
from seepient.protocol.mcp_link import McpStartError

_STDERR_TAIL_BYTES = 2000
_HTTP_CONNECT_TIMEOUT_S = 30.0
_HTTP_READ_TIMEOUT_S = 300.0


class _WatchedReceiveStream(anyio.abc.AsyncResource):
    """The transport's receive stream, unchanged except that its end sets ``lost``: the dispatcher reading it
    learns of a dead server from an end of stream, and so does whoever holds the link. (``AsyncResource``
    makes it the context manager that closes it.)"""

    def __init__(self, inner: Any, lost: anyio.Event) -> None:
        self._inner = inner
        self._lost = lost

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._lost.set()
            raise

    def __aiter__(self) -> _WatchedReceiveStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Link:
    """One open transport (``McpLink``): streams for the client session, and what is known when it ends."""

    def __init__(self, describe: str, stderr: Any | None = None) -> None:
        self.lost = anyio.Event()
        self.streams: Any = None
        self._describe = describe
        self._stderr = stderr

    def watch(self, read_stream: Any, write_stream: Any) -> None:
        self.streams = (_WatchedReceiveStream(read_stream, self.lost), write_stream)

    def exit_reason(self) -> str:
        tail = _tail(self._stderr)
        return f"{self._describe}" + (f"; its last error output:\n{tail}" if tail else "")


def _tail(stderr: Any | None) -> str:
    if stderr is None:
        return ""
    try:
        fd = stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - _STDERR_TAIL_BYTES)
        data = os.pread(fd, size - start, start)
    except (OSError, ValueError):
        return ""
    return data.decode("utf-8", errors="replace").strip()


def _pinned_backend(host: str, addresses: tuple[str, ...]) -> PinnedBackend:
    """Connects only to the addresses validated for the server's host when the connection was opened: a later
    DNS answer (rebinding) or another host can never be reached through this client."""
    pinned_host = host.strip("[]").lower()

    def addresses_for(requested: str) -> tuple[str, ...]:
        if requested != pinned_host:
            raise httpcore2.ConnectError(f"the MCP connection to {pinned_host} may not reach {requested}")
        return addresses

    return PinnedBackend(addresses_for, unix_refusal="MCP connections never use Unix sockets")


class _PinnedTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, host: str, addresses: tuple[str, ...]) -> None:
        # The parent's constructor would build its own pool with a resolving backend; the pool is the only
        # state its request path uses.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=True, trust_env=False),
            max_connections=10,
            http1=True,
            http2=False,
            network_backend=_pinned_backend(host, addresses),
        )


@asynccontextmanager
async def open_stdio(
    name: str, command: str, args: Sequence[str], env: Mapping[str, str], cwd: Path
) -> AsyncIterator[_Link]:
    """Start the stdio server ``name`` (``command`` already resolved, ``cwd`` already checked)."""
    params = StdioServerParameters(command=command, args=list(args), env=dict(env), cwd=str(cwd))
    with tempfile.TemporaryFile() as stderr:
        link = _Link(f"the process of MCP server {name} ({command}) ended", stderr)
        async with AsyncExitStack() as stack:
            try:
                streams = await stack.enter_async_context(stdio_client(params, errlog=stderr))  # type: ignore[arg-type]
            except OSError as exc:
                raise McpStartError(
                    f"MCP server {name}: cannot start {command}: {exc.strerror or exc}"
                ) from exc
            link.watch(*streams)
            yield link


@asynccontextmanager
async def open_http(
    name: str, url: str, host: str, addresses: tuple[str, ...], headers: Mapping[str, str]
) -> AsyncIterator[_Link]:
    """Connect to the streamable-HTTP server ``name`` at ``url``, reaching ``host`` only at ``addresses``
    (the ones the address policy allowed)."""
    client = httpx2.AsyncClient(
        transport=_PinnedTransport(host, addresses),
        trust_env=False,
        follow_redirects=False,
        headers=dict(headers),
        timeout=httpx2.Timeout(_HTTP_CONNECT_TIMEOUT_S, read=_HTTP_READ_TIMEOUT_S),
    )
    link = _Link(f"the connection to MCP server {name} at {url} closed")
    async with client, streamable_http_client(url, http_client=client) as streams:
        link.watch(*streams)
        yield link
