"""A one-shot HTTPS server on loopback with a certificate made by the openssl command line, for tests of
what a client verifies: it records the SNI names and request heads it saw and answers each request with a
fixed response."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path


def self_signed_certificate(directory: Path, name: str, *, ip: str | None = None) -> tuple[Path, Path]:
    """``(cert, key)`` for ``name`` (and ``ip`` when given) that no authority vouches for."""
    key, cert = directory / "key.pem", directory / "cert.pem"
    alt = f"DNS:{name}" + (f",IP:{ip}" if ip else "")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName={alt}", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@dataclass
class TlsServer:
    port: int
    cert: Path
    names: list[str | None] = field(default_factory=list)
    """The SNI names clients sent."""
    heads: list[bytes] = field(default_factory=list)
    """The request heads that arrived (none when the handshake failed)."""


@asynccontextmanager
async def tls_server(
    directory: Path, name: str, response: bytes, *, ip: str | None = None
) -> AsyncIterator[TlsServer]:
    cert, key = self_signed_certificate(directory, name, ip=ip)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    served = TlsServer(port=0, cert=cert)
    context.sni_callback = lambda sock, sni, ctx: served.names.append(sni)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            served.heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(response)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    served.port = server.sockets[0].getsockname()[1]
    try:
        yield served
    finally:
        server.close()
        await server.wait_closed()
