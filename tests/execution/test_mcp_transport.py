"""The host side of MCP without a server: the environment a stdio server gets, commands and folders that
cannot be used, and URLs the address policy refuses before any connection is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.config.sections import McpServerSettings
from seepient.config.settings import PermissionSettings
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


# -- what a server reads from the folder it starts in (red team, after issue 15) ------------------------------
# A stdio server is the user's program, but it started in the workspace: `python -m NAME` puts that folder
# first on sys.path (a planted NAME.py, or json.py, ran instead), npx runs the workspace's own
# node_modules copy of the package and reads its .npmrc (`node-options=--require ./x.js`), uv reads uv.toml,
# dotenv loaders read .env. All of that is the model's to write, and it ran on the host at the next start.


async def test_a_server_started_as_a_module_does_not_import_the_workspace(tmp_path: Path) -> None:
    import sys

    import anyio

    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = tmp_path / "PLANTED-RAN"
    (workspace / "mcp_server_time.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    connector = HostMcpConnector(workspace, environ=environ)
    server = McpServerSettings(command=sys.executable, args=["-m", "mcp_server_time"])
    async with connector.connect("time", server):
        # The process ends at once either way: the planted module runs and returns, or there is no such module.
        for _ in range(30):
            if marker.exists():
                break
            await anyio.sleep(0.1)
    assert not marker.exists(), "a module planted in the workspace ran on the host"


@pytest.mark.parametrize(
    ("home", "expected"),
    [("home", "home"), ("ws", "/"), ("ws/inner", "/"), ("missing", "/")],
)
def test_a_server_starts_in_the_users_home_or_at_the_root_never_in_the_workspace(
    tmp_path: Path, home: str, expected: str
) -> None:
    (tmp_path / "ws" / "inner").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    connector = HostMcpConnector(tmp_path / "ws", environ={"PATH": "/bin", "HOME": str(tmp_path / home)})
    cwd = connector.start_folder("s", McpServerSettings(command="/bin/true"))
    assert cwd == (tmp_path / expected if expected != "/" else Path("/"))


def test_a_cwd_the_user_names_is_still_honoured(tmp_path: Path) -> None:
    (tmp_path / "ws" / "tools").mkdir(parents=True)
    connector = HostMcpConnector(tmp_path / "ws", environ={"PATH": "/bin", "HOME": str(tmp_path)})
    server = McpServerSettings(command="/bin/true", cwd="tools")
    assert connector.start_folder("s", server) == tmp_path / "ws" / "tools"


async def test_what_a_server_starts_in_turn_is_not_looked_up_in_the_workspace(tmp_path: Path) -> None:
    """An activated project virtualenv (or ./node_modules/.bin, or a relative entry) on PATH: the server's
    program lies outside the workspace, but the `helper` it runs was found in the workspace, on the host."""
    import anyio

    workspace = tmp_path / "ws"
    (workspace / ".venv" / "bin").mkdir(parents=True)
    marker = tmp_path / "PLANTED-HELPER-RAN"
    helper = workspace / ".venv" / "bin" / "mcp-helper"
    helper.write_text(f"#!/bin/sh\ntouch {marker}\n")
    helper.chmod(0o755)
    server_program = tmp_path / "tools" / "server"
    server_program.parent.mkdir()
    server_program.write_text("#!/bin/sh\nmcp-helper\n")
    server_program.chmod(0o755)
    path = f"{workspace}/.venv/bin:.:bin::/usr/bin:/bin"
    connector = HostMcpConnector(workspace, environ={"PATH": path, "HOME": str(tmp_path)})
    assert connector.environment(McpServerSettings(command="x"))["PATH"] == "/usr/bin:/bin"
    async with connector.connect("s", McpServerSettings(command=str(server_program))):
        for _ in range(30):
            if marker.exists():
                break
            await anyio.sleep(0.1)
    assert not marker.exists(), "a program planted in the workspace ran on the host"
