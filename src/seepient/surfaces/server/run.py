"""Starting the server: open and recover the store, enforce the start-up rules, and run uvicorn.

Binding to anything but loopback with no token in the store is refused: such a server would answer
only 401s, and an operator who did it meant to expose a server without auth.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from seepient.config import SeepientPaths
from seepient.protocol.errors import ConfigurationError
from seepient.protocol.frozen import build_deferred_models
from seepient.store import Store, database_url
from seepient.surfaces.server.access_log import RequestSink
from seepient.surfaces.server.app import ServerState, create_app
from seepient.surfaces.server.auth import RateLimiter
from seepient.surfaces.server.config import ServerConfig, default_config, is_loopback, load_server_config
from seepient.surfaces.server.event_feed import close_cut_turn
from seepient.surfaces.server.manager import SessionManager
from seepient.tools.registry import builtin_registry


class ServerStartError(ConfigurationError):
    """The server must not start as asked; the message says why and what to do."""


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 7337
    config_file: Path | None = None
    database: str | None = None
    cwd: Path | None = None
    paths: SeepientPaths | None = None
    request_log: RequestSink | None = None
    """Handed each request's log entry (``access_log.json_lines`` or ``log_events``); no log when ``None``."""


async def prepare(options: ServerOptions) -> tuple[ServerState, ServerConfig]:
    """Open the store, mark turns a crash cut as interrupted, and build the state the app runs on."""
    paths = options.paths or SeepientPaths.from_env()
    loopback = is_loopback(options.host)
    if options.config_file is not None:
        config = load_server_config(options.config_file)
    else:
        config = default_config(cwd=(options.cwd or Path.cwd()).resolve(), loopback=loopback)
    store = await Store.open(database_url(options.database, paths.home))
    try:
        if not loopback and not await store.has_tokens():
            raise ServerStartError(
                f"refusing to listen on {options.host}, which is not a loopback address, with no token "
                "configured: create one with `seepient tokens create --principal NAME` first"
            )
        # Closes each cut turn's stream, so a client replaying it sees the turn end rather than hang.
        await store.recover_after_crash(close=close_cut_turn)
    except BaseException:
        await store.aclose()
        raise
    # The built-in tools' schemas are made once per process (``Tool.spec``) and every model's validator on first
    # use (``deferred_config``): both now rather than by the first turns, which on a busy server all start at
    # once and would wait for them together.
    builtin_registry().specs()
    build_deferred_models()
    manager = SessionManager(store, config, paths=paths, config_file=options.config_file)
    state = ServerState(
        store=store,
        manager=manager,
        limiter=RateLimiter(config.rate_limit.requests_per_second, config.rate_limit.burst),
        max_request_bytes=config.max_request_bytes,
        max_ws_frame_bytes=config.max_ws_frame_bytes,
        request_log=options.request_log,
    )
    return state, config


def _uvicorn_config(
    app: object, options: ServerOptions, config: ServerConfig, sock: socket.socket | None
) -> uvicorn.Config:
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=options.host,
        port=options.port,
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=config.max_ws_frame_bytes,
        # Event frames are a few hundred bytes each: compressing every one costs the server (and each
        # client) more CPU per event than the bandwidth it saves is worth.
        ws_per_message_deflate=False,
        lifespan="on",
        server_header=False,
        # Streams end on their own when the server stops (``ServerState.stop_streams``); this bounds the wait
        # for anything else a client holds open.
        timeout_graceful_shutdown=_GRACEFUL_S,
    )


_GRACEFUL_S = 3
_GC_YOUNG = 10_000


class _StoppingServer(uvicorn.Server):
    """uvicorn's server, which on SIGTERM/SIGINT also ends the open event streams at once: uvicorn waits for
    open responses, and an SSE stream or a WebSocket never ends by itself."""

    def __init__(self, config: uvicorn.Config, state: ServerState) -> None:
        super().__init__(config)
        self._state = state
        self._loop = asyncio.get_running_loop()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # A signal handler runs between any two bytecodes of the loop's thread: hand the work to the loop.
        self._loop.call_soon_threadsafe(self._state.stop_streams)


def listening_urls(server: uvicorn.Server) -> list[str]:
    """Where a started server accepts connections (the real port when 0 was asked for)."""
    urls = []
    for listener in server.servers:
        for sock in listener.sockets:
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            urls.append(f"http://{shown}:{port}")
    return urls


async def serve(options: ServerOptions, on_listening: Callable[[list[str]], None] | None = None) -> None:
    """Run until SIGINT/SIGTERM; ``on_listening`` is told the addresses once the server accepts connections."""
    state, config = await prepare(options)
    app = create_app(state, on_shutdown=state.store.aclose)
    server = _StoppingServer(_uvicorn_config(app, options, config, None), state)
    if on_listening is not None:
        announce = asyncio.create_task(_announce(server, on_listening))  # noqa: F841  (kept while serving)
    # Everything imported and built so far lives as long as the server: leaving it out of the collector's
    # full passes keeps each one (and the pause it makes every client wait through) proportional to the
    # sessions' own objects rather than to the whole program.
    gc.freeze()
    # A young pass every _GC_YOUNG new objects rather than every 700: what a streamed event allocates is gone
    # before the next pass, so fewer objects are promoted, and a full pass (tens of milliseconds over every
    # session's objects, which every client waits through) no longer falls into the burst of turns starting
    # at once. A young pass over this many objects takes well under a millisecond.
    gc.set_threshold(_GC_YOUNG, *gc.get_threshold()[1:])
    await server.serve()


async def _announce(server: uvicorn.Server, on_listening: Callable[[list[str]], None]) -> None:
    while not server.started:
        if server.should_exit:
            return
        await asyncio.sleep(0.02)
    on_listening(listening_urls(server))


@asynccontextmanager
async def running_server(options: ServerOptions) -> AsyncIterator[str]:
    """An in-process server on ``options.host`` and a free port, yielding its base URL (for tests and tools)."""
    state, config = await prepare(options)
    app = create_app(state, on_shutdown=state.store.aclose)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((options.host, options.port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(_uvicorn_config(app, options, config, sock))
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise ServerStartError("the server stopped before it started")
            await asyncio.sleep(0.01)
        yield f"http://{options.host}:{port}"
    finally:
        state.stop_streams()
        server.should_exit = True
        await task
        sock.close()
