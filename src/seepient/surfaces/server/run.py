"""Starting the server: open and recover the store, enforce the start-up rules, and run uvicorn.

Binding to anything but loopback with no token in the store is refused: such a server would answer
only 401s, and an operator who did it meant to expose a server without auth.
"""

from __future__ import annotations

import contextlib
import gc
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from seepient.config import SeepientPaths
from seepient.store import Store, database_url
from seepient.surfaces.server.app import ServerState, create_app
from seepient.surfaces.server.auth import RateLimiter
from seepient.surfaces.server.config import ServerConfig, default_config, is_loopback, load_server_config
from seepient.surfaces.server.live import close_cut_turn
from seepient.surfaces.server.manager import SessionManager


class ServerStartError(Exception):
    """The server must not start as asked; the message says why and what to do."""


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 7337
    config_file: Path | None = None
    database: str | None = None
    cwd: Path | None = None
    paths: SeepientPaths | None = None


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
    manager = SessionManager(store, config, paths=paths, config_file=options.config_file)
    state = ServerState(
        store=store,
        manager=manager,
        limiter=RateLimiter(config.rate_limit.requests_per_second, config.rate_limit.burst),
        max_request_bytes=config.max_request_bytes,
        max_ws_frame_bytes=config.max_ws_frame_bytes,
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
    )


async def serve(options: ServerOptions) -> None:
    """Run until interrupted (SIGINT/SIGTERM)."""
    state, config = await prepare(options)
    app = create_app(state, on_shutdown=state.store.aclose)
    server = uvicorn.Server(_uvicorn_config(app, options, config, None))
    # Everything imported and built so far lives as long as the server: leaving it out of the collector's
    # full passes keeps each one (and the pause it makes every client wait through) proportional to the
    # sessions' own objects rather than to the whole program.
    gc.freeze()
    await server.serve()


@asynccontextmanager
async def running_server(options: ServerOptions) -> AsyncIterator[str]:
    """An in-process server on ``options.host`` and a free port, yielding its base URL (for tests and tools)."""
    import asyncio

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
        server.should_exit = True
        await task
        sock.close()
