"""What every streaming HTTP adapter shares: the request/stream skeleton (one httpx2 client per event loop, the
SSE request, reading events into a wire format's assembly, the completion at the end) and the mapping of HTTP
statuses and transport failures to ``ModelError`` with the right ``retryable`` flag. An adapter holds only its
wire format: the request body, its headers, its error body shape and how its events assemble."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import ipaddress
import json
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Required, TypedDict
from urllib.parse import urlsplit

from pydantic_core import from_json, to_json

from seepient.models._wire import error_body_details
from seepient.models.base import ModelError
from seepient.protocol import Completion, ModelRequest, ModelStreamEvent

if TYPE_CHECKING:
    import ssl

    import httpx2

    from seepient.models._direct_transport import DirectTransport

MAX_ERROR_BODY_BYTES = 64 * 1024
CONNECT_TIMEOUT_S = 15.0
_FINISH_BODY_S = 1.0
# Error types and codes, sent inside a 200 stream or an error body, that a later attempt can get past.
TRANSIENT_ERROR_MARKERS = (
    "server_error",
    "overloaded",
    "rate_limit",
    "timeout",
    "unavailable",
    "internal",
    "api_error",
    "resource_exhausted",
)
# Client errors a later attempt can get past: a request timeout and a rate limit; every other 4xx says the
# request itself is wrong and is not retried.
_TRANSIENT_CLIENT_STATUSES = frozenset({408, 429})
# A request the server found invalid, whatever status it chose: llama-cpp-python reports its pydantic
# validation errors as HTTP 500, and no retry makes the same body valid.
_VALIDATION_ERROR = re.compile(r"\bvalidation errors?\b|\bfield required\b", re.IGNORECASE)
# How servers say the prompt does not fit: OpenAI's and llama-cpp-python's ``context_length_exceeded`` code,
# "maximum context length" (OpenAI, vLLM), "exceed context window" (llama.cpp), "prompt is too long"
# (Anthropic), "exceeds the maximum number of tokens" (Gemini).
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context (?:window|length) (?:of|exceeded)|"
    r"exceeds? (?:the )?context window|prompt is too long|exceeds the maximum number of tokens",
    re.IGNORECASE,
)


def httpx() -> Any:
    # httpx2 costs ~70 ms to import; only a process that really talks to a model should pay for it.
    import httpx2

    return httpx2


@functools.cache
def shared_tls_context(trust_env: bool) -> ssl.SSLContext:
    """One verifying TLS context per process (and per ``trust_env``, which decides whether SSL_CERT_FILE is
    read), as httpx would make for each client."""
    return httpx().create_ssl_context(trust_env=trust_env)


def _environment_names_a_proxy() -> bool:
    """Whether the environment (or, on macOS and Windows, the system) names a proxy for any scheme: read as
    httpx2 reads it, with ``urllib.request.getproxies``."""
    from urllib.request import getproxies

    proxies = getproxies()
    return any(proxies.get(scheme) for scheme in ("http", "https", "all"))


def is_loopback_url(url: str) -> bool:
    """True when ``url`` names this machine (``localhost`` or a loopback address)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str, example: str) -> str:
    parts = urlsplit(base_url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ModelError(f"base URL {base_url!r} is not an http(s) URL: give the API root, e.g. {example}")
    return base_url.rstrip("/")


def json_or_none(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a provider asked for: ``retry-after-ms`` (OpenAI, Anthropic) or ``Retry-After``
    (RFC 9110 §10.2.3: delay-seconds or an HTTP-date)."""
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


# jiter (pydantic-core's JSON parser) reads a stream chunk about three times faster than the json module.
_loads = from_json


def encode_body(body: Mapping[str, Any]) -> bytes:
    """A request body as compact UTF-8 JSON (what httpx's ``json=`` sends, but with NaN and infinities as null):
    pydantic-core writes it several times faster than the json module, and every step sends the whole history
    and the tools' schemas again (~0.4 ms of a 27 kB body)."""
    return to_json(body, inf_nan_mode="null")


class EncodedParts:
    """The JSON text of the objects every request of a conversation sends again (its messages, its tools' schemas),
    remembered for each object while it lives: a step re-encoded the whole history and every schema. The objects
    are frozen models; an object's text goes when the object does (a step's system message, a compacted history),
    so what is kept is about the size of the live conversation."""

    _KEPT = 4096

    def __init__(self) -> None:
        self._known: dict[int, tuple[weakref.ref[Any], bytes]] = {}

    def encoded(self, item: Any, wire: Callable[[Any], Any]) -> bytes:
        """``encode_body(wire(item))``, remembered for ``item``."""
        key = id(item)
        known = self._known.get(key)
        if known is not None and known[0]() is item:
            return known[1]
        data = encode_body(wire(item))
        if len(self._known) >= self._KEPT:
            self._known.clear()
        known_now = self._known

        def forget(ref: weakref.ref[Any]) -> None:
            # Runs while the object is freed, before its id can name another; the entry is checked to be its own.
            entry = known_now.get(key)
            if entry is not None and entry[0] is ref:
                del known_now[key]

        self._known[key] = (weakref.ref(item, forget), data)
        return data

    def __len__(self) -> int:
        return len(self._known)


def encode_object(fields: Mapping[str, bytes]) -> bytes:
    """A JSON object of already encoded values, byte for byte what ``encode_body`` writes for the same object."""
    return b"{" + b",".join(to_json(name) + b":" + value for name, value in fields.items()) + b"}"


def encode_array(items: Iterable[bytes]) -> bytes:
    """A JSON array of already encoded items, as ``encode_body`` writes it."""
    return b"[" + b",".join(items) + b"]"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def protobuf_duration_seconds(value: object) -> float | None:
    """``"30s"`` or ``"1.5s"`` (google.protobuf.Duration in JSON) as seconds."""
    if not isinstance(value, str):
        return None
    match = _DURATION.match(value)
    return float(match.group(1)) if match else None


def is_transient(kind: str) -> bool:
    kind = kind.lower()
    return any(marker in kind for marker in TRANSIENT_ERROR_MARKERS)


def is_context_overflow(message: str, kind: str) -> bool:
    """Whether an error says the request is longer than the model's context window."""
    return bool(_CONTEXT_OVERFLOW.search(kind) or _CONTEXT_OVERFLOW.search(message))


CONTEXT_OVERFLOW_HINT = (
    "shorten the conversation (/compact in the TUI) or set context.windowTokens to the model's real window "
    "so Seepient compacts before it is full"
)


class StreamAssembly(Protocol):
    """One wire format's reading of one streamed answer. ``feed`` takes each server-sent event and gives what
    the caller streams (raising ``ModelError`` for an error event or a malformed one); ``finished`` says the
    stream has said all it will; ``missing`` names what a stream that ended lacked to be complete."""

    finished: bool

    def feed(self, event: httpx2.ServerSentEvent) -> list[ModelStreamEvent]: ...

    def missing(self) -> str | None: ...

    def completion(self, *, fallback_model: str) -> Completion: ...


class Connection(TypedDict, total=False):
    """How an adapter reaches its provider: the API root, the key (and the variable it came from, named in
    errors when the provider refuses it), the read timeout, and the name Seepient uses for the model."""

    base_url: Required[str]
    api_key: Required[str | None]
    timeout_s: float
    name: str | None
    api_key_env: str | None


class StreamingHTTPModel:
    """Base of the wire-format adapters. A subclass sets ``wire_format``, ``api_root_example`` and ``endpoint``
    (and how the key is sent) and implements ``request_body``, ``_assembly`` and, for an error body shape of its
    own, ``_error_details``.

    ``model`` is the provider's model id sent on the wire; ``name`` (default: ``model``) is how Seepient refers
    to it in messages and events. ``api_key_env`` only improves error messages.
    """

    wire_format: ClassVar[str] = ""
    api_root_example: ClassVar[str] = ""
    endpoint: ClassVar[str] = ""
    """The streaming endpoint below the API root."""
    version_path: ClassVar[str] = ""
    """Added to a bare host, as the vendors' SDKs take it (``/v1``)."""
    model_example: ClassVar[str] = ""
    key_header: ClassVar[str] = "Authorization"
    key_prefix: ClassVar[str] = "Bearer "
    fixed_headers: ClassVar[Mapping[str, str]] = {}

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
            example = f", e.g. {self.model_example}" if self.model_example else ""
            raise ModelError(f"{type(self).__name__} needs a model id{example}")
        if timeout_s <= 0:
            raise ModelError(f"timeout_s must be positive, not {timeout_s}")
        self.model = model
        self.name = name or model
        self.base_url = check_base_url(base_url, self.api_root_example)
        if self.version_path and urlsplit(self.base_url).path in ("", "/"):
            self.base_url = f"{self.base_url}{self.version_path}"
        self.timeout_s = timeout_s
        self._api_key = api_key or None
        self._api_key_env = api_key_env
        self._headers = dict(self.fixed_headers)
        if self._api_key:
            self._headers[self.key_header] = f"{self.key_prefix}{self._api_key}"
        self._url = self._stream_url()
        # Proxy variables must not reroute a call meant for this machine (and a local server is no reason to
        # consult the environment at all); remote endpoints honour HTTPS_PROXY like any other client.
        self._trust_env = not is_loopback_url(self.base_url)
        self._connections: DirectTransport | httpx2.AsyncClient | None = None
        self._connections_loop: asyncio.AbstractEventLoop | None = None
        self._request: tuple[str, httpx2.Request] | None = None
        self._parts = EncodedParts()

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so tests and debugging tools can show it)."""
        raise NotImplementedError

    def request_bytes(self, request: ModelRequest) -> bytes:
        """``request_body`` as the bytes sent (an adapter may build them from parts it remembers)."""
        return encode_body(self.request_body(request))

    def _assembly(self) -> StreamAssembly:
        raise NotImplementedError

    def _stream_url(self) -> str:
        return f"{self.base_url}{self.endpoint}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        content = self.request_bytes(request)
        assembly = self._assembly()
        feed = assembly.feed  # looked up once: this loop runs once per token
        received = False
        async with self._event_source(self._url, content, self._headers) as source:
            events = aiter(source)
            async for event in events:
                received = True
                for out in feed(event):
                    yield out
                if assembly.finished:
                    break
            await self._finish_body(events)
        missing = assembly.missing()
        if missing is not None:
            raise self._incomplete(missing) if received else self._empty_stream()
        yield assembly.completion(fallback_model=self.model)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        connections, self._connections = self._connections, None
        loop, self._connections_loop = self._connections_loop, None
        if connections is not None and loop is asyncio.get_running_loop():
            await connections.aclose()

    def _connections_for_running_loop(self) -> DirectTransport | httpx2.AsyncClient:
        # A pooled connection belongs to the event loop that opened it. The SDK's blocking ``chat()`` runs
        # each call in a fresh loop, so connections left over from a finished loop are dropped, not reused.
        loop = asyncio.get_running_loop()
        if self._connections is None or self._connections_loop is not loop:
            tls = self._tls()
            if self._trust_env and _environment_names_a_proxy():
                # The proxy variables, NO_PROXY and the system's settings are httpx2's to read and follow.
                httpx2 = httpx()
                self._connections = httpx2.AsyncClient(
                    timeout=httpx2.Timeout(self.timeout_s, connect=self._connect_timeout_s()),
                    trust_env=True,
                    verify=tls,
                )
            else:
                from seepient.models._direct_transport import DirectTransport

                self._connections = DirectTransport(tls=tls or None)
            self._connections_loop = loop
        return self._connections

    def _connect_timeout_s(self) -> float:
        return min(self.timeout_s, CONNECT_TIMEOUT_S)

    def _tls(self) -> ssl.SSLContext | bool:
        """The verifying context for an https endpoint, shared by every client of the process (loading the
        CA bundle costs tens of milliseconds). A plain-http loopback endpoint gets no context at all: the
        client asks only that origin, follows no redirect and, being loopback, consults no proxy, so no TLS
        handshake can happen on it."""
        if self._trust_env or self.base_url.lower().startswith("https:"):
            return shared_tls_context(self._trust_env)
        return False

    @asynccontextmanager
    async def _response(
        self, url: str, content: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[httpx2.Response]:
        """The answer to POSTing ``content`` to ``url``, its body still to be read; closed on the way out."""
        raw_headers = self._raw_headers(headers)
        connections = self._connections_for_running_loop()
        request = self._request_for(url)
        if isinstance(connections, httpx().AsyncClient):
            from seepient.models._direct_transport import STREAM_REQUEST_HEADERS

            async with connections.stream(
                "POST", request.url, content=content, headers={**STREAM_REQUEST_HEADERS, **headers}
            ) as response:
                yield response
            return
        response = await connections.post(
            request,
            raw_headers,
            content,
            connect_timeout=self._connect_timeout_s(),
            timeout=self.timeout_s,
        )
        try:
            yield response
        finally:
            await response.aclose()

    def _raw_headers(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        raw = []
        for name, value in headers.items():
            try:
                raw.append((name.encode("ascii"), value.encode("latin-1")))
            except UnicodeEncodeError:
                # The value is not shown: it is most likely the key.
                raise ModelError(
                    f"model {self.name}: the {name} header holds characters an HTTP header cannot carry; "
                    f"{self._key_hint()}"
                ) from None
        return raw

    @asynccontextmanager
    async def _event_source(
        self, url: str, content: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[httpx2.EventSource]:
        """POST ``content`` and give the event source of a successful answer. Every failure, while connecting or
        while the caller iterates the events inside the ``async with``, becomes a ``ModelError``. (A context
        manager rather than a generator of events: one async hop less per token.)"""
        httpx2 = httpx()
        answered = False
        try:
            async with self._response(
                url, content, {**headers, "Content-Type": "application/json"}
            ) as response:
                answered = True
                if response.status_code >= 400:
                    raise await self._http_error(response, url)
                if response.status_code >= 300:
                    # Redirects are not followed: the key would travel to wherever the answer points.
                    raise ModelError(
                        f"model {self.name}: {url} redirected (HTTP {response.status_code}) to "
                        f"{response.headers.get('location', 'an unnamed address')}; set the base URL to the "
                        "final address",
                        status=response.status_code,
                    )
                # An event stream is UTF-8 whatever its Content-Type says (WHATWG HTML, "Server-sent
                # events"); saying so spares the response parsing its header for a charset.
                response.encoding = "utf-8"
                yield httpx2.EventSource(response)
        except ModelError:
            raise
        except httpx2.SSEError as exc:
            raise ModelError(
                f"model {self.name}: {url} did not answer with a usable event stream ({exc}); "
                f"check that the base URL points at the API root, e.g. {self.api_root_example}",
            ) from exc
        except httpx2.TimeoutException as exc:
            raise ModelError(
                f"model {self.name}: no data from {url} within {self.timeout_s:g} s ({type(exc).__name__})",
                retryable=True,
            ) from exc
        except httpx2.ConnectError as exc:
            raise ModelError(
                f"model {self.name}: cannot connect to {self.base_url} ({exc}); is the server running?",
                retryable=True,
            ) from exc
        except httpx2.TransportError as exc:
            when = "mid-stream" if answered else "before it answered"
            raise ModelError(
                f"model {self.name}: the connection to {self.base_url} failed {when} ({_describe(exc)})",
                retryable=True,
            ) from exc
        except httpx2.HTTPError as exc:
            raise ModelError(
                f"model {self.name}: the answer from {self.base_url} could not be read ({type(exc).__name__}: {exc})"
            ) from exc

    def _request_for(self, url: str) -> httpx2.Request:
        """A request naming ``url``, made once: what the answer and its errors refer to (httpx parses a text
        URL twice per request, a sixth of building one)."""
        made = self._request
        if made is None or made[0] != url:
            made = self._request = (url, httpx().Request("POST", url))
        return made[1]

    async def _finish_body(self, events: AsyncIterator[Any]) -> None:
        """Read what follows the last event (the chunked body's end) so the connection goes back to the pool
        instead of being dropped; a server that keeps the body open gets a second, then the connection is."""
        httpx2 = httpx()
        try:
            async with asyncio.timeout(_FINISH_BODY_S):
                async for _ in events:
                    pass
        except (TimeoutError, httpx2.HTTPError):
            pass

    def _decode_json(self, data: str) -> dict[str, Any]:
        try:
            value = _loads(data)
        except ValueError as exc:
            raise ModelError(
                f"model {self.name}: the stream from {self.base_url} carried a data line that is not JSON "
                f"({exc}): {data[:200]!r}"
            ) from exc
        if not isinstance(value, dict):
            raise ModelError(
                f"model {self.name}: the stream from {self.base_url} carried a data line that is not a JSON "
                f"object: {data[:200]!r}"
            )
        return value

    def _stream_error(self, payload: Any) -> ModelError:
        message, kind, _ = self._error_details(payload)
        if is_context_overflow(message, kind):
            return ModelError(
                f"model {self.name}: the request is longer than the model's context window (reported "
                f"mid-stream): {message}; {CONTEXT_OVERFLOW_HINT}"
            )
        return ModelError(
            f"model {self.name}: the provider reported an error mid-stream: {message or 'no message given'}",
            retryable=is_transient(kind),
        )

    def _incomplete(self, what: str) -> ModelError:
        return ModelError(
            f"model {self.name}: the stream from {self.base_url} ended before the model finished ({what})",
            retryable=True,
        )

    def _empty_stream(self) -> ModelError:
        # Not retried: a server that fails this way fails the same way for the same request (llama-cpp-python
        # raises inside its stream generator after the status line is out).
        return ModelError(
            f"model {self.name}: {self._url} answered HTTP 200 and then closed the stream without sending "
            "a single event: the server failed after it started answering, and its log says why. "
            "llama-cpp-python does this when the prompt is longer than its context window (--n_ctx) and when "
            "its chat format cannot serve the offered tools (see docs/local-models.md)"
        )

    def _error_details(self, payload: Any) -> tuple[str, str, float | None]:
        """The human message, the machine type/code (lowercase) and any wait the body asks for; by default the
        error body shape OpenAI, Anthropic and most compatible servers share (``_wire.error_body_details``)."""
        return error_body_details(payload)

    def _key_hint(self) -> str:
        if self._api_key_env:
            return f"check the API key in ${self._api_key_env}"
        if self._api_key is None:
            return (
                "no API key was sent; if this endpoint needs one, set apiKeyEnv for its provider in settings"
            )
        return "check the API key"

    async def _http_error(self, response: httpx2.Response, url: str) -> ModelError:
        status = response.status_code
        raw = bytearray()
        async for piece in response.aiter_bytes():
            raw.extend(piece)
            if len(raw) >= MAX_ERROR_BODY_BYTES:
                break
        message, kind, body_wait = self._error_details(json_or_none(bytes(raw)))
        if not message:
            message = bytes(raw[:500]).decode("utf-8", "replace").strip() or response.reason_phrase
        where = f"HTTP {status} from {url}"
        if status in (401, 403):
            return ModelError(
                f"model {self.name}: the provider refused the request ({where}): {message}; {self._key_hint()}",
                status=status,
            )
        if status == 404:
            return ModelError(
                f"model {self.name}: model {self.model!r} or endpoint {url} not found ({where}): {message}; "
                f"check the model name and that the base URL is the API root, e.g. {self.api_root_example}",
                status=status,
            )
        if status != 429 and is_context_overflow(message, kind):
            return ModelError(
                f"model {self.name}: the request is longer than the model's context window ({where}): "
                f"{message}; {CONTEXT_OVERFLOW_HINT}",
                status=status,
            )
        if status >= 500 and _VALIDATION_ERROR.search(message):
            return ModelError(
                f"model {self.name}: the server rejected the request as invalid ({where}, a validation "
                f"error reported as a server error, so it is not retried): {message}",
                status=status,
            )
        retry_after = retry_after_seconds(response.headers)
        if retry_after is None:
            retry_after = body_wait
        if status == 429:
            # A 429 for an exhausted quota or billing limit will not clear by waiting.
            quota = "quota" in kind or "billing" in kind
            return ModelError(
                f"model {self.name}: {'quota exhausted' if quota else 'rate limited'} ({where}): {message}",
                retryable=not quota,
                status=status,
                retry_after_s=retry_after,
            )
        if status >= 500 or status in _TRANSIENT_CLIENT_STATUSES:
            label = "provider overloaded" if status == 529 or "overloaded" in kind else "provider error"
            return ModelError(
                f"model {self.name}: {label} ({where}): {message}",
                retryable=True,
                status=status,
                retry_after_s=retry_after,
            )
        return ModelError(f"model {self.name}: request rejected ({where}): {message}", status=status)


def _describe(exc: BaseException) -> str:
    detail = str(exc) or (str(exc.__cause__) if exc.__cause__ else "") or "connection reset"
    return f"{type(exc).__name__}: {detail}"
