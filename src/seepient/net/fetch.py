"""``safe_fetch``: the one way Seepient fetches a URL on the model's behalf. It resolves and checks every
address, connects only to a validated one, and re-checks every redirect hop (DESIGN §4 invariant 8)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, Literal

import httpcore2
import httpx2

from seepient.net.address_policy import AddressPolicy
from seepient.net.pinned_backend import PinnedBackend
from seepient.net.url import ParsedUrl, UrlError, join_url, parse_url
from seepient.protocol.errors import ExecutionError

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``(host, port) -> addresses``: injectable so tests can map names to loopback servers or rebind DNS."""

DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 5
DEFAULT_HOP_TIMEOUT_S = 15.0
DEFAULT_DEADLINE_S = 60.0
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_CROSS_ORIGIN_DROPPED = ("authorization", "cookie", "proxy-authorization")
_NEVER_FORWARDED = ("host", "proxy-authorization", "proxy-connection", "content-length", "transfer-encoding")
_USER_AGENT = "Seepient-fetch/1"


class FetchError(ExecutionError):
    """A fetch that did not produce a response; the message says why."""


class FetchBlocked(FetchError):
    """The URL, a redirect target or one of its addresses is not allowed by the address policy."""

    def __init__(self, verdict: UrlVerdict) -> None:
        super().__init__(f"refused to fetch {verdict.url}: {verdict.reason}")
        self.verdict = verdict


class FetchTimeout(FetchError):
    """A hop took longer than the per-hop timeout, or the whole fetch passed its deadline."""


class FetchTooLarge(FetchError):
    """The response body exceeded the size cap."""


class TooManyRedirects(FetchError):
    """The server redirected more times than allowed."""


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for ``host``, without duplicates."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in found:
            found.append(address)
    return found


@dataclass(frozen=True)
class UrlVerdict:
    """Whether a URL may be fetched, why, and the addresses its host resolved to."""

    url: str
    allowed: bool
    reason: str
    addresses: tuple[str, ...] = ()
    parsed: ParsedUrl | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "allowed": self.allowed,
            "reason": self.reason,
            "addresses": list(self.addresses),
        }


async def check_target(
    parsed: ParsedUrl, *, policy: AddressPolicy, resolver: Resolver | None = None, url: str | None = None
) -> UrlVerdict:
    """Check the port, resolve the host and check every address; blocked if any one is."""
    shown = url if url is not None else parsed.geturl()
    port_problem = policy.port_reason(parsed.port)
    if port_problem is not None:
        return UrlVerdict(shown, False, port_problem, (), parsed)
    if parsed.ip is not None:
        addresses = (str(parsed.ip),)
    else:
        try:
            answer = await (resolver or system_resolve)(parsed.host, parsed.port)
        except (OSError, UnicodeError) as exc:
            return UrlVerdict(shown, False, f"cannot resolve {parsed.host}: {exc}", (), parsed)
        addresses = tuple(dict.fromkeys(str(a) for a in answer))
        if not addresses:
            return UrlVerdict(shown, False, f"{parsed.host} resolved to no address", (), parsed)
    for text in addresses:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            return UrlVerdict(
                shown, False, f"the resolver returned {text!r}, which is not an address", addresses
            )
        problem = policy.address_reason(address, parsed.host)
        if problem is not None:
            # One blocked answer blocks the URL: the connection could otherwise be steered to it.
            return UrlVerdict(shown, False, problem, addresses, parsed)
    if policy.host_allowlisted(parsed.host):
        reason = f"{parsed.host} is allowlisted in net.allowHosts"
    elif parsed.ip is not None:
        reason = f"{parsed.ip} is a public address"
    else:
        reason = f"every address of {parsed.host} is public or allowlisted"
    return UrlVerdict(shown, True, reason, addresses, parsed)


async def check_url(
    url: str, *, policy: AddressPolicy | None = None, resolver: Resolver | None = None
) -> UrlVerdict:
    """Parse, resolve and check ``url`` without fetching it."""
    try:
        parsed = parse_url(url)
    except UrlError as exc:
        return UrlVerdict(url, False, str(exc))
    return await check_target(parsed, policy=policy or AddressPolicy(), resolver=resolver, url=url)


# The addresses validated for the hop in progress, by host. A context variable, because the connection
# is opened inside the request's own task, and concurrent fetches must never see each other's pins.
_pins: ContextVar[Mapping[str, tuple[str, ...]] | None] = ContextVar("seepient_net_pins", default=None)


def _pinned_addresses(host: str) -> tuple[str, ...]:
    return (_pins.get() or {}).get(host, ())


_default_ssl_context: ssl.SSLContext | None = None


def _ssl_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    # Loading the CA bundle costs tens of milliseconds; the verifying context is immutable once built, so
    # one is shared by every fetcher in the process.
    global _default_ssl_context
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is not True:
        return httpx2.create_ssl_context(verify=verify, trust_env=False)
    if _default_ssl_context is None:
        _default_ssl_context = httpx2.create_ssl_context(verify=True, trust_env=False)
    return _default_ssl_context


class _PinnedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport over a pool whose network backend is pinned; no proxy, no environment."""

    def __init__(self, verify: ssl.SSLContext | bool) -> None:
        # The parent's constructor is skipped on purpose: it would build its own pool (and SSL context);
        # ``_pool`` is the only state its request path uses.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=_ssl_context(verify),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            http1=True,
            http2=False,
            network_backend=PinnedBackend(
                _pinned_addresses, unix_refusal="safe_fetch never connects to Unix sockets"
            ),
        )


@dataclass(frozen=True)
class FetchResult:
    """A final (non-redirect) response. ``url`` is where it came from after redirects; ``address`` the
    validated IP the last hop connected to."""

    url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    content: bytes
    redirects: tuple[str, ...] = ()
    truncated: bool = False
    address: str | None = None

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((value for key, value in self.headers if key.lower() == lowered), None)

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in (self.header("content-type") or "").split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip('"')
        return None


def _clean_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    cleaned = {"user-agent": _USER_AGENT}
    for key, value in (headers or {}).items():
        if key.lower() not in _NEVER_FORWARDED:
            cleaned[key.lower()] = value
    return cleaned


class SafeFetcher:
    """A reusable safe client: one connection pool, one address policy. ``verify`` is for tests that
    serve TLS with their own CA; ``resolver`` replaces system DNS (tests, the egress proxy)."""

    def __init__(
        self,
        policy: AddressPolicy | None = None,
        *,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        hop_timeout_s: float = DEFAULT_HOP_TIMEOUT_S,
        deadline_s: float = DEFAULT_DEADLINE_S,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.policy = policy or AddressPolicy()
        self.resolver = resolver
        self.max_redirects = max_redirects
        self.hop_timeout_s = hop_timeout_s
        self.deadline_s = deadline_s
        self.max_response_bytes = max_response_bytes
        self._client = httpx2.AsyncClient(
            transport=_PinnedTransport(verify),
            trust_env=False,
            follow_redirects=False,
            # Cookies never persist between fetches: one site's cookie must not ride along to another.
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            timeout=httpx2.Timeout(hop_timeout_s),
        )

    async def __aenter__(self) -> SafeFetcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def check(self, url: str) -> UrlVerdict:
        return await check_url(url, policy=self.policy, resolver=self.resolver)

    async def fetch(
        self,
        url: str,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        *,
        on_too_large: Literal["error", "truncate"] = "error",
    ) -> FetchResult:
        """Fetch ``url``, following at most ``max_redirects`` redirects, each re-validated and re-pinned.

        Raises ``FetchBlocked``, ``TooManyRedirects``, ``FetchTimeout``, ``FetchTooLarge`` (unless
        ``on_too_large="truncate"``) or ``FetchError``.
        """
        try:
            async with asyncio.timeout(self.deadline_s):
                return await self._follow(url, method.upper(), _clean_headers(headers), body, on_too_large)
        except TimeoutError:
            raise FetchTimeout(f"fetching {url} did not finish within {self.deadline_s:g} s") from None

    async def _follow(
        self, url: str, method: str, headers: dict[str, str], body: bytes | None, on_too_large: str
    ) -> FetchResult:
        try:
            current = parse_url(url)
        except UrlError as exc:
            raise FetchBlocked(UrlVerdict(url, False, str(exc))) from None
        redirects: list[str] = []
        for hop in range(self.max_redirects + 1):
            verdict = await check_target(current, policy=self.policy, resolver=self.resolver)
            if not verdict.allowed:
                raise FetchBlocked(verdict)
            response = await self._send(current, verdict.addresses, method, headers, body)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECT_CODES and location is not None:
                    if hop == self.max_redirects:
                        raise TooManyRedirects(
                            f"{url} redirected more than {self.max_redirects} times (last to {location})"
                        )
                    try:
                        target = join_url(current, location)
                    except UrlError as exc:
                        raise FetchBlocked(
                            UrlVerdict(location, False, f"redirect target refused: {exc}")
                        ) from None
                    # RFC 9110 §15.4: user agents turn a POST into a GET on 301/302; 303 means "GET this".
                    if (response.status_code in (301, 302) and method == "POST") or (
                        response.status_code == 303 and method != "HEAD"
                    ):
                        method, body = "GET", None
                        headers = {k: v for k, v in headers.items() if not k.startswith("content-")}
                    if target.origin != current.origin:
                        headers = {k: v for k, v in headers.items() if k not in _CROSS_ORIGIN_DROPPED}
                    redirects.append(target.geturl())
                    current = target
                    continue
                peer = _peer_address(response)
                content, truncated = await self._read_capped(response, current, on_too_large)
                return FetchResult(
                    url=current.geturl(),
                    status=response.status_code,
                    headers=tuple((k, v) for k, v in response.headers.multi_items()),
                    content=content,
                    redirects=tuple(redirects),
                    truncated=truncated,
                    address=peer,
                )
            finally:
                await response.aclose()
        raise AssertionError("unreachable: the loop returns or raises")

    async def _send(
        self,
        target: ParsedUrl,
        addresses: tuple[str, ...],
        method: str,
        headers: dict[str, str],
        body: bytes | None,
    ) -> httpx2.Response:
        token = _pins.set({target.host: addresses})
        try:
            request = self._client.build_request(method, target.geturl(), headers=headers, content=body)
            return await self._client.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            raise FetchTimeout(
                f"{target.geturl()} did not answer within {self.hop_timeout_s:g} s ({exc})"
            ) from None
        except httpx2.HTTPError as exc:
            raise FetchError(f"fetching {target.geturl()} failed: {exc or type(exc).__name__}") from None
        finally:
            _pins.reset(token)

    async def _read_capped(
        self, response: httpx2.Response, target: ParsedUrl, on_too_large: str
    ) -> tuple[bytes, bool]:
        cap = self.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap and on_too_large == "error":
            raise FetchTooLarge(f"{target.geturl()} is {int(declared)} bytes, over the {cap}-byte cap")
        chunks: list[bytes] = []
        size = 0
        try:
            # Counted after decompression, so a small gzip bomb cannot expand past the cap.
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > cap:
                    if on_too_large == "error":
                        raise FetchTooLarge(f"{target.geturl()} sent more than the {cap}-byte cap")
                    chunks.append(chunk[: len(chunk) - (size - cap)])
                    return b"".join(chunks), True
                chunks.append(chunk)
        except httpx2.TimeoutException as exc:
            raise FetchTimeout(f"{target.geturl()} stalled while sending its body ({exc})") from None
        except httpx2.HTTPError as exc:
            raise FetchError(f"reading {target.geturl()} failed: {exc or type(exc).__name__}") from None
        return b"".join(chunks), False


def _peer_address(response: httpx2.Response) -> str | None:
    stream = response.extensions.get("network_stream")
    if stream is None:
        return None
    peer = stream.get_extra_info("server_addr")
    if not peer:
        sock = stream.get_extra_info("socket")
        peer = sock.getpeername() if sock is not None else None
    return str(peer[0]) if peer else None


async def safe_fetch(
    url: str,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    *,
    policy: AddressPolicy | None = None,
    resolver: Resolver | None = None,
    fetcher: SafeFetcher | None = None,
    on_too_large: Literal["error", "truncate"] = "error",
    **options: Any,
) -> FetchResult:
    """Fetch ``url`` safely. Pass a long-lived ``fetcher`` to reuse connections; otherwise one is made
    for this call from ``policy``, ``resolver`` and ``options`` (``SafeFetcher`` keywords) and closed."""
    if fetcher is not None:
        return await fetcher.fetch(url, method, headers, body, on_too_large=on_too_large)
    async with SafeFetcher(policy, resolver=resolver, **options) as own:
        return await own.fetch(url, method, headers, body, on_too_large=on_too_large)
