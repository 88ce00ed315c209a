"""TLS through the pinned connection: the socket goes to the validated IP, while SNI, certificate checking
and the Host header all keep the hostname. The certificate is made with the openssl command line."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from seepient.net import AddressPolicy, FetchError, SafeFetcher
from tests.net.conftest import mapped_resolver

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None and os.environ.get("CI") != "true",
    reason="the openssl command is not installed (.ci/run installs it, so CI runs this)",
)


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[int, Path, list[str | None], list[bytes]]]:
    cert, key = _certificate(tmp_path, "tls.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    heads: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecure")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    yield server.sockets[0].getsockname()[1], cert, names, heads
    server.close()
    await server.wait_closed()


async def test_https_to_a_pinned_address_keeps_the_hostname(tls_server) -> None:
    port, cert, names, heads = tls_server
    verify = ssl.create_default_context(cafile=str(cert))
    policy = AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[port])
    async with SafeFetcher(
        policy, resolver=mapped_resolver({"tls.test": ["127.0.0.1"]}), verify=verify
    ) as fetcher:
        result = await fetcher.fetch(f"https://tls.test:{port}/")
    assert result.content == b"secure" and result.address == "127.0.0.1"
    assert names == ["tls.test"]
    assert f"host: tls.test:{port}".encode() in heads[0].lower()


async def test_a_certificate_for_another_name_is_refused(tls_server) -> None:
    port, cert, names, _ = tls_server
    verify = ssl.create_default_context(cafile=str(cert))
    policy = AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[port])
    async with SafeFetcher(
        policy, resolver=mapped_resolver({"other.test": ["127.0.0.1"]}), verify=verify
    ) as fetcher:
        with pytest.raises(FetchError, match="other.test"):
            await fetcher.fetch(f"https://other.test:{port}/")
    assert names == ["other.test"]
