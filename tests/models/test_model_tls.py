"""The model clients' TLS: one verifying context shared by every https client, none made for a loopback http
server, and verification still on (a certificate nobody vouches for is refused before any request is sent)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from seepient.models._http import shared_tls_context
from seepient.models.base import ModelError
from seepient.models.openai_chat import OpenAIChatModel
from seepient.protocol import Message, ModelRequest
from tests.support.tls_server import tls_server


@pytest.fixture
async def tls_port(tmp_path: Path) -> AsyncIterator[tuple[int, list[bytes]]]:
    response = b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    async with tls_server(tmp_path, "localhost", response, ip="127.0.0.1") as served:
        yield served.port, served.heads


async def _first_event(model: OpenAIChatModel) -> None:
    request = ModelRequest(model="m", messages=(Message.user("hi"),), tools=())
    try:
        async for _ in model.stream(request):
            break
    finally:
        await model.aclose()


def test_every_https_client_shares_one_verifying_context() -> None:
    first = OpenAIChatModel("gpt-4.1", base_url="https://api.openai.com/v1", api_key="k")
    second = OpenAIChatModel("gpt-4.1", base_url="https://models.example/v1", api_key="k")
    context = first._tls()
    assert isinstance(context, ssl.SSLContext) and context is second._tls()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert shared_tls_context(True) is context


def test_a_loopback_http_server_gets_no_tls_context_but_remote_http_keeps_one() -> None:
    assert OpenAIChatModel("m", base_url="http://127.0.0.1:8000/v1", api_key=None)._tls() is False
    # A remote http endpoint may be reached through an https proxy from the environment: that hop verifies.
    remote = OpenAIChatModel("m", base_url="http://models.internal:8000/v1", api_key=None)._tls()
    assert isinstance(remote, ssl.SSLContext) and remote.verify_mode == ssl.CERT_REQUIRED


async def test_an_https_server_with_a_certificate_nobody_vouches_for_is_refused(tls_port) -> None:
    port, heads = tls_port
    model = OpenAIChatModel("m", base_url=f"https://127.0.0.1:{port}/v1", api_key="secret-key")
    with pytest.raises(ModelError) as caught:
        await _first_event(model)
    assert "certificate" in str(caught.value).lower() or "ssl" in str(caught.value).lower(), caught.value
    assert heads == [], "no request (and so no key) was sent to the unverified server"
