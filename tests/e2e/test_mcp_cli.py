"""MCP from the real command line: ``seepient run`` starts the user's MCP servers, calls them through the
pipeline and stops them at exit; the server never sees Seepient's secrets; ``seepient tools`` lists them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import BIN
from tests.e2e.conftest import SECRET_MARKER, RunCli, Sandboxed, json_events

HELPER = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "helper_server.py"


def _settings(world: Sandboxed) -> None:
    world.seepient_home.mkdir(parents=True, exist_ok=True)
    servers = {
        "time": {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "helper": {"command": sys.executable, "args": [str(HELPER)]},
    }
    allowed = ["Mcp(time:get_current_time)", "Mcp(helper:environment)"]
    settings = {"mcpServers": servers, "permissions": {"allow": allowed}}
    (world.seepient_home / "settings.json").write_text(json.dumps(settings))


def test_run_calls_mcp_tools_headless_and_keeps_secrets_from_servers(
    world: Sandboxed, seepient: RunCli
) -> None:
    _settings(world)
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
                    {"name": "mcp__helper__environment", "arguments": {}},
                    {"name": "mcp__helper__echo", "arguments": {"text": "needs approval"}},
                ]
            },
            {"text": "done"},
        ]
    )
    result = seepient("run", "--model", f"replay:{script}", "--json", "what time is it?")
    assert result.returncode == 5, result.stderr  # the echo needed approval and was refused
    # The two read-only calls run together, so their results arrive in whichever order they finish.
    results = {e["tool"]: e for e in json_events(result.stdout) if e["type"] == "tool_result"}
    assert len(results) == 3
    current = results["mcp__time__get_current_time"]
    environment = results["mcp__helper__environment"]
    echo = results["mcp__helper__echo"]
    assert current["status"] == "ok" and json.loads(current["output"])["timezone"] == "Asia/Tokyo"
    assert environment["status"] == "ok"
    names = environment["output"].split()
    assert "PATH" in names
    for secret in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MY_SECRET_THING"):
        assert secret not in names
    assert SECRET_MARKER not in result.stdout
    # Not allowed, and no one to ask: refused, never sent.
    assert echo["status"] == "rejected"
    statuses = {r["action"]["tool"]: r["outcome"]["status"] for r in world.audit_records()}
    assert statuses["mcp__time__get_current_time"] == "ok"
    assert statuses["mcp__helper__echo"] == "rejected"
    assert statuses["mcp_server_start"] == "ok"


def test_tools_lists_mcp_tools_and_reports_a_broken_server(world: Sandboxed, seepient: RunCli) -> None:
    world.seepient_home.mkdir(parents=True, exist_ok=True)
    servers = {
        "time": {"command": str(BIN / "mcp-server-time")},
        "broken": {"command": "/bin/sh", "args": ["-c", "exit 4"]},
    }
    (world.seepient_home / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    result = seepient("tools", "--json")
    assert result.returncode == 0, result.stderr
    names = [spec["name"] for spec in json.loads(result.stdout)]
    assert "mcp__time__get_current_time" in names and "mcp__time__convert_time" in names
    assert not any(name.startswith("mcp__broken__") for name in names)
    assert "MCP server broken did not start" in result.stderr
