"""TLS through the pinned connection: the socket goes to the validated IP, while SNI, certificate checking
and the Host header all keep the hostname. The certificate is made with the openssl command line."""

from __future__ import annotations

import os
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from seepient.net import AddressPolicy, FetchError, SafeFetcher
from tests.net.conftest import mapped_resolver
from tests.support.tls_server import tls_server as serve_tls

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None and os.environ.get("CI") != "true",
    reason="the openssl command is not installed (.ci/run installs it, so CI runs this)",
)


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[int, Path, list[str | None], list[bytes]]]:
    response = b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecure"
    async with serve_tls(tmp_path, "tls.test", response) as served:
        yield served.port, served.cert, served.names, served.heads


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
