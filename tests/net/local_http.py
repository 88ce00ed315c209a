"""A small HTTP/1.1 test server on a loopback address (TCP_NODELAY set, DESIGN §6) whose routes are plain
functions, recording every request it receives."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: Callable[[asyncio.StreamWriter], Awaitable[None]] | None = None
    """Writes the body itself (slow or endless bodies); the head is sent without Content-Length."""


Route = Callable[[Seen], Reply | Awaitable[Reply]]


@dataclass
class LocalHttpServer:
    host: str = "127.0.0.1"
    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _server: asyncio.AbstractServer | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    def url(self, path: str = "/", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    async def start(self) -> LocalHttpServer:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *lines = head[:-4].decode("latin-1").split("\r\n")
                method, path, _ = line.split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                seen = Seen(method, path, headers, body)
                self.seen.append(seen)
                route = self.routes.get(path.split("?", 1)[0])
                if route is None:
                    reply = Reply(404, body=b"not found")
                else:
                    result = route(seen)
                    reply = await result if isinstance(result, Awaitable) else result
                await self._write(writer, reply)
                if reply.stream is not None or headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, reply: Reply) -> None:
        headers = {"content-type": "text/plain", **reply.headers}
        if reply.stream is None:
            headers["content-length"] = str(len(reply.body))
        else:
            headers["connection"] = "close"
        head = (
            f"HTTP/1.1 {reply.status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        )
        writer.write(head.encode("latin-1"))
        if reply.stream is None:
            writer.write(reply.body)
            await writer.drain()
        else:
            await writer.drain()
            await reply.stream(writer)


def redirect(location: str, status: int = 302) -> Route:
    return lambda seen: Reply(status, {"location": location})


def text(body: str, content_type: str = "text/plain") -> Route:
    return lambda seen: Reply(200, {"content-type": content_type}, body.encode())
