"""The egress proxy for sandboxed commands granted the network: an HTTP(S) proxy on a Unix socket that
applies the address policy and the Fetch domain rules to every connection (CONNECT for TLS).

The sandbox gets its own empty network namespace; the only way out is a forwarder inside it that relays
127.0.0.1:PORT to this proxy's socket, bind-mounted in. Anything that ignores the proxy has nowhere to go.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from seepient.net._sandbox_forwarder import pipe
from seepient.net.address_policy import AddressPolicy
from seepient.net.url import ParsedUrl, UrlError, parse_url
from seepient.protocol.errors import RefusalError

if TYPE_CHECKING:
    from seepient.net.fetch import Resolver, UrlVerdict

DomainCheck = Callable[[str], str | None]
"""``host -> reason`` to refuse it (e.g. a ``Fetch(domain:…)`` deny rule), or None to let it through."""

SANDBOX_PROXY_PORT = 3128
SANDBOX_SOCKET_DIR = "/dev/.seepient-egress"
"""Where the proxy's socket appears inside the sandbox. /dev there is a fresh tmpfs made by bubblewrap, so
creating the mount point touches nothing on the host, whatever the workspace is."""
_SOCKET_NAME = "proxy.sock"
_MAX_HEAD_BYTES = 64 * 1024
_HEAD_TIMEOUT_S = 30.0
_FORWARDER = Path(__file__).with_name("_sandbox_forwarder.py")
_HOP_HEADERS = ("proxy-connection", "proxy-authorization", "keep-alive")


@functools.cache
def _forwarder_source() -> str:
    return _FORWARDER.read_text(encoding="utf-8")


@dataclass(frozen=True)
class EgressDecision:
    """One connection the proxy allowed or refused, for logs and tests."""

    target: str
    allowed: bool
    reason: str


class _Refused(RefusalError):
    def __init__(self, status: int, target: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.target, self.reason = status, target, reason


@dataclass
class EgressProxy:
    """Start with ``async with EgressProxy(policy=…) as proxy``; hand the sandbox ``sandbox_argv``,
    ``sandbox_env`` and ``sandbox_binds``. ``resolver`` replaces system DNS (tests map names to loopback)."""

    policy: AddressPolicy = field(default_factory=AddressPolicy)
    resolver: Resolver | None = None
    domain_check: DomainCheck | None = None
    connect_timeout_s: float = 10.0
    decisions: list[EgressDecision] = field(default_factory=list)
    _directory: Path | None = None
    _server: asyncio.AbstractServer | None = None
    _connections: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def socket_path(self) -> Path:
        if self._directory is None:
            raise RuntimeError("the egress proxy is not started")
        return self._directory / _SOCKET_NAME

    async def start(self) -> None:
        self._directory = Path(tempfile.mkdtemp(prefix="seepient-egress-"))
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=_MAX_HEAD_BYTES
        )

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    async def __aenter__(self) -> EgressProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- what the sandbox needs ---------------------------------------------------------------------------

    def sandbox_argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped in the forwarder, which must run inside the sandbox's network namespace.

        The base interpreter runs the forwarder's source with ``-c``: a checkout (and its virtualenv) may
        live under /tmp, which the sandbox replaces with a private one, so no path of ours can be relied on.
        """
        inside = f"{SANDBOX_SOCKET_DIR}/{_SOCKET_NAME}"
        python = os.path.realpath(sys.executable)
        return [python, "-I", "-S", "-c", _forwarder_source(), inside, str(SANDBOX_PROXY_PORT), "--", *argv]

    def sandbox_env(self) -> dict[str, str]:
        url = f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
        env = dict.fromkeys(names, url)
        env["NO_PROXY"] = env["no_proxy"] = ""
        return env

    def sandbox_binds(self) -> list[tuple[Path, Path]]:
        """``(host path, sandbox path)`` pairs to bind-mount (the socket's directory)."""
        assert self._directory is not None, "start the proxy first"
        return [(self._directory, Path(SANDBOX_SOCKET_DIR))]

    # -- serving ------------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        except asyncio.CancelledError:
            # Only `aclose` cancels these tasks; the connection ends with the proxy.
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_TIMEOUT_S)
        except TimeoutError:
            return
        request_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3:
            refusal = _Refused(400, request_line[:200], "malformed request line")
            self.decisions.append(EgressDecision(refusal.target, False, refusal.reason))
            await _refuse(writer, refusal)
            return
        method, target, version = parts
        try:
            parsed, verdict = await self._authorise(method, target)
        except _Refused as refusal:
            self.decisions.append(EgressDecision(refusal.target, False, refusal.reason))
            await _refuse(writer, refusal)
            return
        upstream = await self._connect(parsed, verdict, writer)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        self.decisions.append(EgressDecision(target, True, "allowed"))
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            kept = [
                line for line in header_lines if line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS
            ]
            rewritten = "\r\n".join([f"{method} {parsed.target} {version}", *kept]) + "\r\n\r\n"
            up_writer.write(rewritten.encode("latin-1"))
        # The TCP destination is fixed to the validated address: whatever the client sends next on this
        # connection (more requests, another Host header) can only reach that one address.
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        up_writer.close()

    async def _authorise(self, method: str, target: str) -> tuple[ParsedUrl, UrlVerdict]:
        try:
            if method == "CONNECT":
                if target.rsplit(":", 1)[-1] == target or "/" in target:
                    raise _Refused(400, target, "CONNECT needs host:port")
                parsed = parse_url(f"https://{target}/")
                shown = target
            else:
                if not target.lower().startswith(("http://", "https://")):
                    raise _Refused(
                        400,
                        target,
                        "send requests in absolute form (http://host/path), as HTTP proxies expect",
                    )
                parsed = parse_url(target)
                shown = parsed.geturl()
        except UrlError as exc:
            raise _Refused(403, target, str(exc)) from None
        if self.domain_check is not None:
            reason = self.domain_check(parsed.host)
            if reason is not None:
                raise _Refused(403, shown, reason)
        # The HTTP stack loads with the first connection through a proxy, not with every jailed command.
        from seepient.net.fetch import check_target

        verdict = await check_target(parsed, policy=self.policy, resolver=self.resolver, url=shown)
        if not verdict.allowed:
            raise _Refused(403, shown, verdict.reason)
        return parsed, verdict

    async def _connect(
        self, parsed: ParsedUrl, verdict: UrlVerdict, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        failure = "no address"
        for address in verdict.addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address, parsed.port), self.connect_timeout_s
                )
            except (OSError, TimeoutError) as exc:
                failure = f"{address}: {exc}"
        refusal = _Refused(502, parsed.geturl(), f"cannot connect to {parsed.host} ({failure})")
        self.decisions.append(EgressDecision(refusal.target, False, refusal.reason))
        await _refuse(writer, refusal)
        return None


async def _refuse(writer: asyncio.StreamWriter, refusal: _Refused) -> None:
    phrase = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[refusal.status]
    body = f"seepient egress proxy refused {refusal.target}: {refusal.reason}\n".encode()
    head = (
        f"HTTP/1.1 {refusal.status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nX-Seepient-Egress: refused\r\n\r\n"
    )
    writer.write(head.encode() + body)
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
