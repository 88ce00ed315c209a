"""The adapters' own HTTP/1.1 transport against a real socket server that plays each thing a server can do to a
connection: keep it alive, close it while idle, cut an answer short, say nothing, refuse it, or answer a
proxy's way. Each must end in a usable answer or in the ``ModelError`` the adapters promise, never a hang."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from seepient.models.base import ModelError
from seepient.models.openai_chat import OpenAIChatModel
from seepient.protocol import Message, ModelRequest
from tests.models.helpers import HELLO, collect, collect_until_error, only_completion, track

_Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[bool]]


def _chunk(text: str) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }


def _events(text: str) -> bytes:
    chunks = [
        _chunk(text),
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    body = (
        b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    )
    return body


def _chunked(body: bytes) -> bytes:
    return f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return head


class _Server:
    """A loopback server: ``handler(reader, writer, request_number)`` answers one request and says whether the
    connection stays open for the next."""

    def __init__(self, handler: _Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
        self._server: asyncio.base_events.Server | None = None

    async def __aenter__(self) -> _Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while (head := await _read_request(reader)) is not None:
                self.heads.append(head)
                self.requests += 1
                if not await self.handler(reader, writer, self.requests):
                    break
        finally:
            writer.close()


async def _answers(_reader, writer, number: int) -> bool:
    writer.write(_HEAD + _chunked(_events(f"answer {number}")))
    await writer.drain()
    return True


def _model(server: _Server, **options) -> OpenAIChatModel:
    return track(OpenAIChatModel("m", base_url=server.base_url, api_key="k", **options))


def _text(events) -> str:
    return "".join(getattr(event, "text", "") for event in events if type(event).__name__ == "TextChunk")


async def test_steps_share_one_kept_alive_connection():
    async with _Server(_answers) as server:
        model = _model(server)
        texts = [_text(await collect(model)) for _ in range(3)]
    assert texts == ["answer 1", "answer 2", "answer 3"]
    assert server.connections == 1 and server.requests == 3


async def test_a_connection_the_server_closed_while_idle_is_replaced():
    async def answers_then_closes(reader, writer, number):
        await _answers(reader, writer, number)
        return False

    async with _Server(answers_then_closes) as server:
        model = _model(server)
        first = only_completion(await collect(model))
        await asyncio.sleep(0.05)  # the close reaches the client's idle connection
        second = await collect(model)
    assert first.finish_reason == "stop" and _text(second) == "answer 2"
    assert server.connections == 2


async def test_an_answer_cut_short_is_a_retryable_mid_stream_error_and_the_next_call_works():
    async def cuts_the_first(reader, writer, number):
        if number == 1:
            body = _events("partial").split(b"\n\n")[0] + b"\n\n"  # the text, not its end
            writer.write(_HEAD + f"{len(body) + 400:x}\r\n".encode() + body)  # promises more than it sends
            await writer.drain()
            return False
        return await _answers(reader, writer, number)

    async with _Server(cuts_the_first) as server:
        model = _model(server)
        with pytest.raises(ModelError) as caught:
            await collect(model)
        assert caught.value.retryable and "mid-stream" in str(caught.value)
        assert _text(await collect(model)) == "answer 2"


async def test_a_server_that_closes_before_answering_is_a_retryable_error():
    async def closes(_reader, _writer, _number):
        return False

    async with _Server(closes) as server:
        with pytest.raises(ModelError) as caught:
            await collect(_model(server))
    assert caught.value.retryable and "before it answered" in str(caught.value)


async def test_a_server_that_says_nothing_times_out_with_the_models_timeout():
    async def silent(_reader, _writer, _number):
        await asyncio.sleep(5)
        return False

    async with _Server(silent) as server:
        with pytest.raises(ModelError) as caught:
            await collect(_model(server, timeout_s=0.3))
    assert caught.value.retryable and "no data from" in str(caught.value) and "0.3 s" in str(caught.value)


async def test_a_refused_connection_says_the_server_is_not_running():
    async with _Server(_answers) as server:
        url = server.base_url
    with pytest.raises(ModelError) as caught:
        await collect(track(OpenAIChatModel("m", base_url=url, api_key=None)))
    assert caught.value.retryable and "is the server running?" in str(caught.value)


async def test_an_error_status_body_is_read_and_the_connection_kept():
    async def refuses_first(reader, writer, number):
        if number == 1:
            body = json.dumps({"error": {"message": "bad key", "type": "invalid_request_error"}}).encode()
            writer.write(
                b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            return True
        return await _answers(reader, writer, number)

    async with _Server(refuses_first) as server:
        model = _model(server)
        with pytest.raises(ModelError, match="bad key") as caught:
            await collect(model)
        assert caught.value.status == 401 and not caught.value.retryable
        assert _text(await collect(model)) == "answer 2"


async def test_a_consumer_that_stops_early_does_not_leave_its_connection_for_the_next_call():
    async with _Server(_answers) as server:
        model = _model(server)
        stream = model.stream(HELLO)
        await anext(stream)
        await stream.aclose()
        assert _text(await collect(model)) == "answer 2"


async def test_a_connection_idle_past_the_keepalive_expiry_is_not_reused(monkeypatch):
    from seepient.models import _direct_transport

    async with _Server(_answers) as server:
        model = _model(server)
        await collect(model)
        monkeypatch.setattr(_direct_transport, "_KEEPALIVE_EXPIRY_S", 0.0)
        assert _text(await collect(model)) == "answer 2"
    assert server.connections == 2


async def test_a_large_answer_head_is_read_and_an_endless_one_refused():
    async def big_headers(_reader, writer, number):
        size = 40_000 if number == 1 else 200_000
        writer.write(
            _HEAD[:-2] + b"x-padding: " + b"a" * size + b"\r\n\r\n" + _chunked(_events(f"answer {number}"))
        )
        await writer.drain()
        return True

    async with _Server(big_headers) as server:
        model = _model(server)
        assert _text(await collect(model)) == "answer 1"
        with pytest.raises(ModelError) as caught:
            await collect(model)
    assert "before it answered" in str(caught.value)


async def test_a_server_that_stalls_mid_answer_times_out_with_the_models_timeout():
    async def stalls(_reader, writer, _number):
        body = _events("partial").split(b"\n\n")[0] + b"\n\n"
        writer.write(_HEAD + f"{len(body):x}\r\n".encode() + body + b"\r\n")
        await writer.drain()
        await asyncio.sleep(5)
        return False

    async with _Server(stalls) as server:
        events, error = await collect_until_error(_model(server, timeout_s=0.3))
    assert _text(events) == "partial"
    assert error.retryable and "no data from" in str(error)


async def test_a_reader_that_falls_behind_stops_the_socket_being_read():
    # 64 MiB of events, far past what loopback socket buffers hold: a client that kept reading into memory
    # would let the server finish writing while its consumer sits on the first event.
    event = b"data: " + json.dumps(_chunk("x" * 1000)).encode() + b"\n\n"
    count = 64 * 1024 * 1024 // len(event) // 256 * 256
    finished = asyncio.Event()

    async def floods(_reader, writer, _number):
        writer.write(_HEAD)
        piece = event * 256
        for _ in range(count // 256):
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
        writer.write(_chunked(_events("end")))
        await writer.drain()
        finished.set()
        return False

    async with _Server(floods) as server:
        stream = _model(server).stream(HELLO)
        await anext(stream)
        await asyncio.sleep(1.0)
        assert not finished.is_set(), "the whole answer was read while nobody asked for it"
        seen = 1
        async with asyncio.timeout(60):
            async for item in stream:
                seen += type(item).__name__ == "TextChunk"
        assert finished.is_set() and seen == count + 1


async def test_a_large_request_body_reaches_a_slow_reader_whole():
    bodies: list[bytes] = []

    async def reads_slowly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        body = bytearray()
        while len(body) < length:
            body += await reader.read(64 * 1024)
            await asyncio.sleep(0.001)
        bodies.append(bytes(body))
        writer.write(_HEAD + _chunked(_events("read it")))
        await writer.drain()
        writer.close()

    # 8 MiB: more than a loopback socket takes at once, so the client must wait for the reader to drain it.
    long_text = "y" * (8 * 1024 * 1024)
    request = ModelRequest(model="label", messages=(Message.user(long_text),))
    server = await asyncio.start_server(reads_slowly, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        model = track(OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k"))
        assert _text(await collect(model, request)) == "read it"
    assert len(bodies) == 1 and json.loads(bodies[0])["messages"][0]["content"] == long_text


async def test_a_key_that_would_add_a_header_is_refused_before_anything_is_sent():
    async with _Server(_answers) as server:
        model = track(OpenAIChatModel("m", base_url=server.base_url, api_key="k\r\nX-Injected: yes"))
        with pytest.raises(ModelError):
            await collect(model)
        await asyncio.sleep(0.05)
    assert server.requests == 0


async def test_a_remote_endpoint_goes_through_the_proxy_the_environment_names(monkeypatch):
    for variable in ("HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    async with _Server(_answers) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))
        model = track(OpenAIChatModel("m", base_url="http://models.invalid/v1", api_key="k"))
        assert _text(await collect(model)) == "answer 1"
    assert proxy.heads[0].startswith(b"POST http://models.invalid/v1/chat/completions ")
    # The same request as without a proxy: Seepient's own user agent, and the stream not compressed.
    head = proxy.heads[0].lower()
    assert b"\r\nuser-agent: seepient/" in head and b"httpx" not in head
    assert b"\r\naccept-encoding: identity\r\n" in head


def test_a_remote_endpoint_with_no_proxy_named_is_reached_directly(monkeypatch):
    from seepient.models._direct_transport import DirectTransport

    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)

    async def connections():
        model = track(OpenAIChatModel("m", base_url="https://models.invalid/v1", api_key="k"))
        return model._connections_for_running_loop()

    assert isinstance(asyncio.run(connections()), DirectTransport)


async def test_a_key_an_http_header_cannot_carry_is_a_clear_error_that_does_not_show_it():
    async with _Server(_answers) as server:
        model = track(
            OpenAIChatModel("m", base_url=server.base_url, api_key="sk-€-secret", api_key_env="KEY")
        )
        with pytest.raises(ModelError) as caught:
            await collect(model)
    assert "Authorization header" in str(caught.value) and "$KEY" in str(caught.value)
    assert "secret" not in str(caught.value) and server.requests == 0
