"""The host side of MCP without a server: the environment a stdio server gets, commands and folders that
cannot be used, and URLs the address policy refuses before any connection is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.config.settings import McpServerSettings, PermissionSettings
from seepient.execution.mcp_transport import HostMcpConnector
from seepient.net import AddressPolicy
from seepient.policy.engine import PolicyEngine
from seepient.tools.mcp import McpStartError

ENVIRON = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/someone",
    "LANG": "C.UTF-8",
    "OPENAI_API_KEY": "sk-secret",
    "ANTHROPIC_API_KEY": "secret",
    "GITHUB_TOKEN": "ghp-secret",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "DB_PASSWORD": "secret",
    "SEEPIENT_HOME": "/home/someone/.seepient",
    "SSH_AUTH_SOCK": "/run/agent",
    "RANDOM_OTHER": "kept out too",
}


def test_stdio_servers_get_a_scrubbed_environment_plus_their_own(tmp_path: Path) -> None:
    connector = HostMcpConnector(tmp_path, environ=ENVIRON)
    server = McpServerSettings(command="srv", env={"GITHUB_TOKEN": "given-on-purpose", "SERVER_MODE": "x"})
    env = connector.environment(server)
    assert env["PATH"] == "/usr/bin:/bin" and env["HOME"] == "/home/someone" and env["LANG"] == "C.UTF-8"
    # What the user wrote for this server is passed on purpose; nothing else secret-looking is inherited.
    assert env["GITHUB_TOKEN"] == "given-on-purpose" and env["SERVER_MODE"] == "x"
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"):
        assert name not in env
    assert "SEEPIENT_HOME" not in env and "SSH_AUTH_SOCK" not in env and "RANDOM_OTHER" not in env


async def _enter(connector: HostMcpConnector, server: McpServerSettings) -> None:
    async with connector.connect("s", server):
        raise AssertionError("should not have connected")


@pytest.mark.parametrize(
    ("server", "message"),
    [
        (McpServerSettings(command="no-such-mcp-server-anywhere"), "was not found on PATH"),
        (McpServerSettings(command="/nonexistent/bin/server"), "is not an executable file"),
        (McpServerSettings(command="/bin/true", cwd="missing-dir"), "is not a directory"),
        (McpServerSettings(url="http://127.0.0.1/mcp"), "loopback"),
        (McpServerSettings(url="http://169.254.169.254/mcp"), "refused to connect"),
        (McpServerSettings(url="https://[fd00::1]/mcp"), "refused to connect"),
        (McpServerSettings(url="http://localhost:8080/mcp"), "port 8080"),
    ],
)
async def test_servers_that_cannot_be_used_fail_with_the_reason(
    tmp_path: Path, server: McpServerSettings, message: str
) -> None:
    connector = HostMcpConnector(tmp_path, environ=ENVIRON, net_policy=AddressPolicy())
    with pytest.raises(McpStartError, match=message):
        await _enter(connector, server)


async def test_a_fetch_deny_rule_covers_mcp_server_hosts_too(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    policy = PolicyEngine(
        tmp_path / "ws",
        seepient_home=tmp_path / "home",
        mode="ask-untrusted",
        permissions=PermissionSettings(deny=["Fetch(domain:example.com)"]),
    )

    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    connector = HostMcpConnector(tmp_path, resolver=public, domain_check=policy.refused_host)
    with pytest.raises(McpStartError, match=r"deny rule .*Fetch\(domain:example.com\)"):
        await _enter(connector, McpServerSettings(url="https://mcp.example.com/mcp"))
