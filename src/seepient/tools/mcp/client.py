"""One connection to one MCP server: started, listed and closed by a task of its own (the SDK's task groups
must be left by the task that entered them), called from any task of the session."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from seepient.config.sections import McpServerSettings
from seepient.protocol.errors import ExecutionError
from seepient.tools.mcp.connector import McpConnector, McpLink, McpStartError

ServerState = Literal["new", "starting", "ready", "failed", "gone", "closed"]
_MAX_TOOL_PAGES = 50
_CLIENT_INFO = types.Implementation(name="seepient", version="0")


class McpCallFailed(ExecutionError, RuntimeError):
    """A call that got no result: the server is gone, timed out or answered with a protocol error."""

    def __init__(self, message: str, *, server_gone: bool = False) -> None:
        super().__init__(message)
        self.server_gone = server_gone


def describe_error(exc: BaseException) -> str:
    """A one-line account of what went wrong, looking inside the exception groups anyio raises."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(describe_error(e) for e in exc.exceptions))
    if isinstance(exc, McpStartError):
        return str(exc)
    if isinstance(exc, MCPError):
        if exc.error.code == CONNECTION_CLOSED:
            return "the connection closed"
        return f"the server answered with error {exc.error.code}: {exc.error.message}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpServerConnection:
    """The client side of one configured server. ``start()`` returns once its tools are listed (or raises
    ``McpStartError`` saying why not); ``on_gone`` is told once if the server goes away on its own."""

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        connector: McpConnector,
        *,
        on_gone: Callable[[McpServerConnection, str], None] | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.state: ServerState = "new"
        self.tools: tuple[types.Tool, ...] = ()
        self.problem: str | None = None
        self._connector = connector
        self._on_gone = on_gone
        self._client: Client | None = None
        self._link: McpLink | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop: anyio.Event | None = None

    @property
    def alive(self) -> bool:
        return self.state == "ready" and self._link is not None and not self._link.lost.is_set()

    async def start(self) -> None:
        if self.state != "new":
            raise RuntimeError(f"MCP server {self.name} was already started")
        self.state = "starting"
        self._stop = anyio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{self.name}")
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if self.state != "ready":
            await asyncio.gather(self._task, return_exceptions=True)
            raise McpStartError(self.problem or f"MCP server {self.name} did not start")

    async def _hold(self) -> None:
        startup_s = self.settings.startup_timeout_ms / 1000
        announced = False
        gone_reason = ""
        cancelled = False
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + startup_s) as scope:
                async with AsyncExitStack() as stack:
                    link = await stack.enter_async_context(self._connector.connect(self.name, self.settings))
                    self._link = link
                    client = Client(
                        _opened(link),
                        read_timeout_seconds=startup_s,
                        client_info=_CLIENT_INFO,
                        cache=None,
                    )
                    try:
                        await stack.enter_async_context(client)
                        self.tools = await _list_tools(client)
                    except Exception as exc:
                        raise McpStartError(
                            self._failure(f"the MCP handshake failed: {describe_error(exc)}")
                        ) from exc
                    scope.deadline = math.inf
                    self._client = client
                    self.state = "ready"
                    self._ready.set()
                    await self._until_stopped_or_lost(link)
                    if link.lost.is_set() and self._stop is not None and not self._stop.is_set():
                        # Read now: the transport's record of the process (its error output) goes with it.
                        gone_reason = link.exit_reason()
            if scope.cancelled_caught and self.state == "starting":
                self.problem = self._failure(f"it did not answer within {startup_s:g} s")
        except asyncio.CancelledError:
            cancelled = True  # the event loop is going away: nothing to report to
            raise
        except Exception as exc:
            if self.state == "starting":
                known = _start_error(exc)
                self.problem = str(known) if known is not None else self._failure(describe_error(exc))
            else:
                # The transport failed under a running session (an HTTP server that stopped answering).
                gone_reason = gone_reason or describe_error(exc)
        finally:
            self._client = None
            stopped = self._stop is not None and self._stop.is_set()
            if self.state == "ready" and not stopped and not cancelled:
                self.state = "gone"
                self.problem = f"MCP server {self.name} went away: {gone_reason or 'its connection closed'}"
                announced = True
            elif self.state == "starting":
                self.state = "failed"
                self.problem = self.problem or f"MCP server {self.name} did not start"
            elif self.state == "ready":
                self.state = "closed"
            self._ready.set()
        if announced and self._on_gone is not None:
            self._on_gone(self, self.problem or "")

    def _failure(self, what: str) -> str:
        reason = self._link.exit_reason() if self._link is not None and self._link.lost.is_set() else ""
        text = f"MCP server {self.name} did not start: {what}"
        return f"{text} ({reason})" if reason else text

    async def _until_stopped_or_lost(self, link: McpLink) -> None:
        assert self._stop is not None
        stop = self._stop
        async with anyio.create_task_group() as group:

            async def wait(event: anyio.Event) -> None:
                await event.wait()
                group.cancel_scope.cancel()

            group.start_soon(wait, stop)
            group.start_soon(wait, link.lost)

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call ``tool``; raises ``McpCallFailed`` when no result came back."""
        client = self._client
        if client is None or not self.alive:
            raise McpCallFailed(
                self.problem or f"MCP server {self.name} is not running", server_gone=self.state != "ready"
            )
        try:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=self.settings.call_timeout_ms / 1000
            )
        except MCPError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                raise McpCallFailed(
                    f"MCP server {self.name} did not answer {tool} within {self.settings.call_timeout_ms} ms"
                ) from exc
            if exc.error.code == CONNECTION_CLOSED or (self._link is not None and self._link.lost.is_set()):
                await self._wait_gone()
                raise McpCallFailed(
                    self.problem or f"MCP server {self.name} closed the connection", server_gone=True
                ) from exc
            raise McpCallFailed(f"MCP server {self.name} refused the call: {describe_error(exc)}") from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            await self._wait_gone()
            raise McpCallFailed(self.problem or f"MCP server {self.name} is gone", server_gone=True) from exc

    async def _wait_gone(self) -> None:
        """Give the holder task a moment to notice the end of the connection, so the report says why."""
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=5)

    async def aclose(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        if self.state in ("ready", "starting", "new"):
            self.state = "closed"


def _start_error(exc: BaseException) -> McpStartError | None:
    if isinstance(exc, McpStartError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _start_error(inner)
            if found is not None:
                return found
    return None


@asynccontextmanager
async def _opened(link: McpLink) -> AsyncIterator[Any]:
    """The SDK takes a transport as a context manager; the link is already open."""
    yield link.streams


async def _list_tools(client: Client) -> tuple[types.Tool, ...]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)
