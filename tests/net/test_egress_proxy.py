"""Filtered egress with real bubblewrap: a command granted the network reaches an allowed domain only through
Seepient's proxy; blocked domains and addresses are refused with a clear message; nothing else gets out."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from seepient.execution.local import LocalExecutor
from seepient.net import AddressPolicy
from seepient.net.egress_proxy import EgressProxy
from seepient.protocol import Capability, ShellCommand, ShellOutcome
from tests.approved import run_shell
from tests.net.conftest import loopback_policy, mapped_resolver
from tests.net.local_http import LocalHttpServer, text
from tests.support.tls_server import tls_server

# The base interpreter: a checkout's virtualenv may live under /tmp, which the sandbox makes private.
PY = shlex.quote(os.path.realpath(sys.executable))


def _deny_evil(host: str) -> str | None:
    return "a Fetch(domain:evil.test) deny rule covers it" if host == "evil.test" else None


@pytest.fixture
async def site() -> AsyncIterator[LocalHttpServer]:
    server = await LocalHttpServer().start()
    server.routes["/"] = text("hello from the allowed site")
    yield server
    await server.close()


@pytest.fixture
def executor(tmp_path: Path, site: LocalHttpServer) -> LocalExecutor:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return LocalExecutor(
        workspace,
        seepient_home=tmp_path / "seepient-home",
        home=tmp_path / "home",
        network_egress="filtered",
        net_policy=loopback_policy(site),
        net_resolver=mapped_resolver(
            {"allowed.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"], "sneaky.test": ["10.0.0.1"]}
        ),
        egress_domain_check=_deny_evil,
    )


async def _run(executor: LocalExecutor, command: str, network: bool = True) -> ShellOutcome:
    return await run_shell(
        executor,
        ShellCommand(
            command=command,
            capabilities=(Capability.NETWORK,) if network else (),
            cwd=str(executor.workspace),
            timeout_ms=30_000,
        ),
    )


def _urlopen(url: str) -> str:
    script = (
        "import urllib.request, urllib.error\n"
        "try:\n"
        f"    print(urllib.request.urlopen({url!r}, timeout=10).read().decode())\n"
        "except urllib.error.HTTPError as exc:\n"
        "    print(exc.code, exc.read().decode())\n"
    )
    return f"{PY} -c {shlex.quote(script)}"


async def test_allowed_domain_is_reached_through_the_proxy(
    executor: LocalExecutor, site: LocalHttpServer
) -> None:
    outcome = await _run(executor, _urlopen(f"http://allowed.test:{site.port}/"))
    assert outcome.exit_code == 0, outcome.stderr
    assert "hello from the allowed site" in outcome.stdout
    assert site.seen[0].headers["host"] == f"allowed.test:{site.port}"


async def test_connect_tunnel_to_an_allowed_domain(executor: LocalExecutor, site: LocalHttpServer) -> None:
    """What pip and git do for https: CONNECT host:port, then speak through the tunnel (plain HTTP here,
    TLS is only bytes to the proxy)."""
    script = (
        "import socket\n"
        "s = socket.create_connection(('127.0.0.1', 3128))\n"
        f"s.sendall(b'CONNECT allowed.test:{site.port} HTTP/1.1\\r\\n\\r\\n')\n"
        "print(s.recv(100).split(b'\\r\\n')[0].decode())\n"
        f"s.sendall(b'GET / HTTP/1.1\\r\\nHost: allowed.test\\r\\nConnection: close\\r\\n\\r\\n')\n"
        "data = b''\n"
        "while chunk := s.recv(4096): data += chunk\n"
        "print(data.decode())\n"
    )
    outcome = await _run(executor, f"{PY} -c {shlex.quote(script)}")
    assert outcome.exit_code == 0, outcome.stderr
    assert "200 Connection established" in outcome.stdout
    assert "hello from the allowed site" in outcome.stdout


async def test_metadata_address_is_refused_with_a_clear_message(executor: LocalExecutor) -> None:
    outcome = await _run(executor, _urlopen("http://169.254.169.254/latest/meta-data/"))
    assert "403 seepient egress proxy refused http://169.254.169.254/latest/meta-data/" in outcome.stdout
    assert "link-local" in outcome.stdout


@pytest.mark.skipif(
    shutil.which("curl") is None and os.environ.get("CI") != "true",
    reason="curl is not installed on this machine (.ci/run installs it, so CI runs this)",
)
async def test_curl_to_metadata_fails_over_http_and_https(executor: LocalExecutor) -> None:
    plain = await _run(executor, "curl -sS -f http://169.254.169.254/")
    assert plain.exit_code != 0 and "403" in plain.stderr
    shown = await _run(executor, "curl -sS http://169.254.169.254/")
    assert "seepient egress proxy refused" in shown.stdout
    tls = await _run(executor, "curl -sS https://169.254.169.254/")
    assert tls.exit_code != 0 and "403" in tls.stderr


async def test_blocked_domain_and_private_resolution_are_refused(
    executor: LocalExecutor, site: LocalHttpServer
) -> None:
    denied = await _run(executor, _urlopen(f"http://evil.test:{site.port}/"))
    assert "403" in denied.stdout and "Fetch(domain:evil.test)" in denied.stdout
    private = await _run(executor, _urlopen("http://sneaky.test/"))
    assert "403" in private.stdout and "10.0.0.1 is private" in private.stdout
    assert site.seen == []


async def test_nothing_bypasses_the_proxy(executor: LocalExecutor, site: LocalHttpServer) -> None:
    script = (
        "import socket\n"
        f"for target in [('127.0.0.1', {site.port}), ('1.1.1.1', 80), ('169.254.169.254', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=3)\n"
        "        print('CONNECTED', target)\n"
        "    except OSError as exc:\n"
        "        print('blocked', target, exc)\n"
    )
    outcome = await _run(executor, f"{PY} -c {shlex.quote(script)}")
    assert outcome.exit_code == 0, outcome.stderr
    assert "CONNECTED" not in outcome.stdout
    assert outcome.stdout.count("blocked") == 3
    assert site.seen == []


async def test_no_network_capability_means_no_proxy_either(
    executor: LocalExecutor, site: LocalHttpServer
) -> None:
    outcome = await _run(executor, _urlopen(f"http://allowed.test:{site.port}/"), network=False)
    assert outcome.exit_code != 0 and "hello" not in outcome.stdout
    assert site.seen == []


async def test_exit_status_passes_through_the_forwarder(executor: LocalExecutor) -> None:
    outcome = await _run(executor, "echo out; echo err >&2; exit 7")
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (7, "out\n", "err\n")


async def test_proxy_refuses_origin_form_and_malformed_requests() -> None:
    async with EgressProxy(policy=AddressPolicy()) as proxy:
        for request in (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"CONNECT 169.254.169.254 HTTP/1.1\r\n\r\n",
            b"junk\r\n\r\n",
        ):
            reader, writer = await asyncio.open_unix_connection(str(proxy.socket_path))
            writer.write(request)
            reply = await reader.read()
            writer.close()
            assert reply.startswith(b"HTTP/1.1 400") and b"seepient egress proxy refused" in reply
        assert [d.allowed for d in proxy.decisions] == [False, False, False]


@pytest.mark.skipif(
    (shutil.which("curl") is None or shutil.which("openssl") is None) and os.environ.get("CI") != "true",
    reason="needs curl and openssl (.ci/run installs both, so CI runs this)",
)
async def test_real_tls_through_the_tunnel_keeps_the_hostname(
    executor: LocalExecutor, tmp_path: Path
) -> None:
    """curl speaks TLS to an allowlisted name through CONNECT, verifying the certificate for that name,
    as pip and git do over HTTPS."""
    response = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\nconnection: close\r\n\r\ntls tunnel"
    async with tls_server(tmp_path, "allowed.test", response) as server:
        # The CA file must be visible inside the sandbox, whose /tmp is private: put it in the workspace.
        ca = executor.workspace / "ca.pem"
        ca.write_bytes(server.cert.read_bytes())
        executor = LocalExecutor(
            executor.workspace,
            seepient_home=tmp_path / "seepient-home",
            home=tmp_path / "home",
            network_egress="filtered",
            net_policy=AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[server.port]),
            net_resolver=mapped_resolver({"allowed.test": ["127.0.0.1"]}),
            egress_domain_check=_deny_evil,
        )
        outcome = await _run(executor, f"curl -sS --cacert ca.pem https://allowed.test:{server.port}/")
    assert outcome.exit_code == 0, outcome.stderr
    assert outcome.stdout == "tls tunnel"
    assert server.names == ["allowed.test"]
