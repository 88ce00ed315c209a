"""The OpenAI Chat Completions adapter: streams ``POST {base_url}/chat/completions`` over httpx2 and its SSE
parser, for OpenAI itself and any compatible server (Ollama, vLLM, llama.cpp, LM Studio)."""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from seepient.models.base import ModelError
from seepient.protocol import (
    Completion,
    Message,
    ModelRequest,
    ModelStreamEvent,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    import httpx2

_MAX_ERROR_BODY_BYTES = 64 * 1024
_CONNECT_TIMEOUT_S = 15.0
# Error types and codes, sent inside a 200 stream or an error body, that a later attempt can get past.
_TRANSIENT_ERROR_MARKERS = ("server_error", "overloaded", "rate_limit", "timeout", "unavailable", "internal")


def _httpx() -> Any:
    # httpx2 costs ~70 ms to import; only a process that really talks to a model should pay for it.
    import httpx2

    return httpx2


def is_loopback_url(url: str) -> bool:
    """True when ``url`` names this machine (``localhost`` or a loopback address)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAIChatModel:
    """A ``Model`` speaking the Chat Completions streaming wire format.

    ``model`` is the provider's model id sent on the wire; ``name`` (default: ``model``) is how Seepient
    refers to it in messages and events. ``api_key_env`` only improves error messages: it names the
    variable the key came from when the provider refuses it.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        timeout_s: float = 600,
        name: str | None = None,
        api_key_env: str | None = None,
    ) -> None:
        if not model:
            raise ModelError("OpenAIChatModel needs a model id, e.g. 'gpt-4o-mini'")
        scheme = urlsplit(base_url).scheme.lower()
        if scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise ModelError(
                f"base URL {base_url!r} is not an http(s) URL: give the API root, e.g. "
                "'https://api.openai.com/v1' or 'http://127.0.0.1:11434/v1'"
            )
        if timeout_s <= 0:
            raise ModelError(f"timeout_s must be positive, not {timeout_s}")
        self.model = model
        self.name = name or model
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._api_key = api_key or None
        self._api_key_env = api_key_env
        self._url = f"{self.base_url}/chat/completions"
        # Proxy variables must not reroute a call meant for this machine (and a local server is no reason to
        # consult the environment at all); remote endpoints honour HTTPS_PROXY like any other client.
        self._trust_env = not is_loopback_url(self.base_url)
        self._client: httpx2.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAIChatModel(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        client, self._client = self._client, None
        loop, self._client_loop = self._client_loop, None
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()

    def _client_for_running_loop(self) -> httpx2.AsyncClient:
        # A pooled connection belongs to the event loop that opened it. The SDK's blocking ``chat()`` runs
        # each call in a fresh loop, so a client left over from a finished loop is dropped, not reused.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            httpx2 = _httpx()
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.timeout_s, connect=min(self.timeout_s, _CONNECT_TIMEOUT_S)),
                trust_env=self._trust_env,
            )
            self._client_loop = loop
        return self._client

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so tests and debugging tools can show it)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(message) for message in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [_wire_tool(tool) for tool in request.tools]
        if request.max_output_tokens is not None:
            # OpenAI's reasoning models refuse the older ``max_tokens``; many compatible servers know only it.
            key = (
                "max_completion_tokens"
                if urlsplit(self.base_url).hostname == "api.openai.com"
                else "max_tokens"
            )
            body[key] = request.max_output_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        httpx2 = _httpx()
        body = self.request_body(request)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        client = self._client_for_running_loop()
        assembly = _StreamAssembly()
        try:
            async with client.sse(self._url, method="POST", json=body, headers=headers) as source:
                response = source.response
                if response.status_code >= 400:
                    raise await self._http_error(response)
                if response.status_code >= 300:
                    # Redirects are not followed: the key would travel to wherever the answer points.
                    raise ModelError(
                        f"model {self.name}: {self._url} redirected (HTTP {response.status_code}) to "
                        f"{response.headers.get('location', 'an unnamed address')}; set the base URL to the "
                        "final address",
                        status=response.status_code,
                    )
                async for event in source:
                    if event.data.strip() == "[DONE]":
                        break
                    if event.event == "error":
                        raise self._stream_error(_json_or_none(event.data) or {"error": event.data})
                    if not event.data.strip():
                        continue
                    chunk = self._decode_chunk(event.data)
                    if chunk.get("error"):
                        raise self._stream_error(chunk)
                    for out in assembly.feed(chunk):
                        yield out
        except ModelError:
            raise
        except httpx2.SSEError as exc:
            raise ModelError(
                f"model {self.name}: {self._url} did not answer with a usable event stream ({exc}); "
                "check that the base URL points at an OpenAI-compatible API root",
            ) from exc
        except httpx2.TimeoutException as exc:
            raise ModelError(
                f"model {self.name}: no data from {self._url} within {self.timeout_s:g} s ({type(exc).__name__})",
                retryable=True,
            ) from exc
        except httpx2.ConnectError as exc:
            raise ModelError(
                f"model {self.name}: cannot connect to {self.base_url} ({exc}); is the server running?",
                retryable=True,
            ) from exc
        except httpx2.TransportError as exc:
            raise ModelError(
                f"model {self.name}: the connection to {self.base_url} failed mid-stream "
                f"({type(exc).__name__}: {exc})",
                retryable=True,
            ) from exc
        except httpx2.HTTPError as exc:
            raise ModelError(
                f"model {self.name}: the answer from {self.base_url} could not be read ({type(exc).__name__}: {exc})"
            ) from exc
        if assembly.finish_reason is None:
            raise ModelError(
                f"model {self.name}: the stream from {self.base_url} ended before the model finished "
                "(no finish_reason)",
                retryable=True,
            )
        yield assembly.completion(fallback_model=self.model)

    def _decode_chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ModelError(
                f"model {self.name}: the stream from {self.base_url} carried a data line that is not JSON "
                f"({exc.msg} at character {exc.pos}): {data[:200]!r}"
            ) from exc
        if not isinstance(chunk, dict):
            raise ModelError(
                f"model {self.name}: the stream from {self.base_url} carried a data line that is not a JSON "
                f"object: {data[:200]!r}"
            )
        return chunk

    def _stream_error(self, chunk: dict[str, Any]) -> ModelError:
        message, kind = _error_details(chunk)
        return ModelError(
            f"model {self.name}: the provider reported an error mid-stream: {message or 'no message given'}",
            retryable=_is_transient(kind),
        )

    async def _http_error(self, response: httpx2.Response) -> ModelError:
        status = response.status_code
        raw = bytearray()
        async for piece in response.aiter_bytes():
            raw.extend(piece)
            if len(raw) >= _MAX_ERROR_BODY_BYTES:
                break
        message, kind = _error_details(_json_or_none(bytes(raw)))
        if not message:
            message = bytes(raw[:500]).decode("utf-8", "replace").strip() or response.reason_phrase
        where = f"HTTP {status} from {self._url}"
        if status in (401, 403):
            if self._api_key_env:
                hint = f"check the API key in ${self._api_key_env}"
            elif self._api_key is None:
                hint = "no API key was sent; if this endpoint needs one, set apiKeyEnv for its provider in settings"
            else:
                hint = "check the API key"
            return ModelError(
                f"model {self.name}: the provider refused the request ({where}): {message}; {hint}",
                status=status,
            )
        if status == 404:
            return ModelError(
                f"model {self.name}: model {self.model!r} or endpoint {self._url} not found ({where}): {message}; "
                "check the model name and that the base URL is the API root (often ending in /v1)",
                status=status,
            )
        retry_after = _retry_after_seconds(response.headers)
        if status == 429:
            # A 429 for an exhausted quota or billing limit will not clear by waiting.
            quota = "quota" in (kind or "") or "billing" in (kind or "")
            return ModelError(
                f"model {self.name}: {'quota exhausted' if quota else 'rate limited'} ({where}): {message}",
                retryable=not quota,
                status=status,
                retry_after_s=retry_after,
            )
        if status >= 500 or status == 408 or status == 409:
            return ModelError(
                f"model {self.name}: provider error ({where}): {message}",
                retryable=True,
                status=status,
                retry_after_s=retry_after,
            )
        return ModelError(f"model {self.name}: request rejected ({where}): {message}", status=status)


@dataclass
class _PendingCall:
    id: str | None = None
    name: str | None = None
    argument_parts: list[str] = field(default_factory=list)


@dataclass
class _StreamAssembly:
    """Accumulates the deltas of one streamed choice into the final assistant message."""

    text_parts: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""

    def feed(self, chunk: dict[str, Any]) -> list[ModelStreamEvent]:
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        out: list[ModelStreamEvent] = []
        for choice in chunk.get("choices") or ():
            # Seepient never asks for n > 1; a server that sends other choices anyway is not heard.
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict):
                for key in ("content", "refusal"):
                    text = delta.get(key)
                    if isinstance(text, str) and text:
                        self.text_parts.append(text)
                        out.append(TextChunk(text=text))
                for fragment in delta.get("tool_calls") or ():
                    if isinstance(fragment, dict):
                        chunk_event = self._feed_tool_call(fragment)
                        if chunk_event is not None:
                            out.append(chunk_event)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return out

    def _feed_tool_call(self, fragment: dict[str, Any]) -> ToolCallChunk | None:
        call_id = fragment.get("id") or None
        index = fragment.get("index")
        if not isinstance(index, int):
            index = self._position_of_unindexed(call_id)
        pending = self.calls.setdefault(index, _PendingCall())
        function = fragment.get("function") or {}
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if call_id is not None and pending.id is None:
            pending.id = str(call_id)
        if isinstance(name, str) and name and pending.name is None:
            pending.name = name
        if not isinstance(arguments, str):
            arguments = ""
        pending.argument_parts.append(arguments)
        if call_id is None and not name and not arguments:
            return None
        return ToolCallChunk(
            index=index, id=str(call_id) if call_id else None, name=name or None, arguments_delta=arguments
        )

    def _position_of_unindexed(self, call_id: object) -> int:
        # Some compatible servers (older Ollama) omit ``index`` and send each call whole: a new id starts a
        # new call, a fragment without an id continues the latest one.
        if call_id is None:
            return max(self.calls, default=0)
        for index, pending in self.calls.items():
            if pending.id == str(call_id):
                return index
        return max(self.calls, default=-1) + 1

    def completion(self, *, fallback_model: str) -> Completion:
        tool_calls = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            raw = "".join(pending.argument_parts)
            arguments, error = _decode_arguments(raw)
            if not pending.name:
                error = "the model sent a tool call without a tool name"
            tool_calls.append(
                ToolCall(
                    id=pending.id or f"call_{uuid.uuid4().hex[:24]}",
                    name=pending.name or "",
                    arguments=arguments,
                    raw_arguments=raw,
                    arguments_error=error,
                )
            )
        return Completion(
            message=Message.assistant("".join(self.text_parts), tool_calls=tuple(tool_calls)),
            finish_reason=self.finish_reason or "stop",
            usage=self.usage or Usage(),
            model=self.model or fallback_model,
        )


def _decode_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"tool arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return {}, f"tool arguments must be a JSON object, not {_json_type(value)}"
    return value, None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else type(value).__name__


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        cached_input_tokens=_int(cached),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ModelError(
                "a tool result message has no tool_call_id: it must answer an assistant tool call"
            )
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _wire_arguments(call)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _wire_arguments(call: ToolCall) -> str:
    # Sending back the model's own bytes keeps the history identical to what it produced, which is what
    # prefix-based prompt caches match on; re-encoding is only for calls that never had raw text.
    if call.raw_arguments is not None and call.raw_arguments.strip():
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _json_or_none(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def _error_details(payload: Any) -> tuple[str, str]:
    """The human message and the machine type/code of a provider error, from the shapes servers use:
    ``{"error": {"message", "type", "code"}}`` (OpenAI), ``{"error": "..."}`` (Ollama),
    ``{"message", "type"}`` (vLLM)."""
    if not isinstance(payload, dict):
        return "", ""
    error = payload.get("error", payload)
    if isinstance(error, str):
        return error, ""
    if not isinstance(error, dict):
        return "", ""
    message = error.get("message")
    kind = " ".join(str(error.get(key)) for key in ("type", "code") if error.get(key) is not None)
    return (message if isinstance(message, str) else ""), kind.lower()


def _is_transient(kind: str) -> bool:
    return any(marker in kind for marker in _TRANSIENT_ERROR_MARKERS)


def _retry_after_seconds(headers: Any) -> float | None:
    # ``retry-after-ms`` is OpenAI's finer-grained variant; ``Retry-After`` is RFC 9110 §10.2.3
    # (delay-seconds or an HTTP-date).
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
