"""What policy says about MCP calls (rules first, the server's declarations only in the consent mode), how MCP
tools are named, and how ``mcpServers`` settings are checked."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest

from seepient.approval.terminal import render_request
from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.config.settings import PermissionSettings
from seepient.policy.engine import PolicyEngine
from seepient.protocol import ActionKind, ApprovalRequest, Decision, PreparedActionDraft, Verdict
from seepient.protocol.actions import McpCall
from seepient.tools.mcp import exposed_name, result_text


def _engine(tmp_path: Path, mode: str = "ask-untrusted", **rules: list[str]) -> PolicyEngine:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return PolicyEngine(
        workspace, seepient_home=tmp_path / "home", mode=mode, permissions=PermissionSettings(**rules)
    )


def _call(server: str, tool: str, *, read_only: bool = True, open_world: bool = False) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool=f"mcp__{server}__{tool}",
        kind=ActionKind.MCP,
        payload=McpCall(
            server=server, tool=tool, arguments={}, read_only_hint=read_only, open_world_hint=open_world
        ),
        read_only=read_only,
        summary=f"MCP {server}:{tool}",
    )


@pytest.mark.parametrize(
    "rule", ["Mcp(time:*)", "Mcp(time)", "Mcp(time:get_current_time)", "Mcp", "mcp__time"]
)
def test_deny_rules_beat_the_servers_read_only_declaration_in_every_mode(tmp_path, rule):
    for mode in ("always-ask", "ask-untrusted", "auto", "autonomous-trusted"):
        verdict = _engine(tmp_path, mode, deny=[rule]).evaluate(_call("time", "get_current_time"))
        assert verdict.decision is Decision.DENY, (rule, mode)
        assert verdict.rule == f"deny:{rule}"


def test_a_server_wildcard_covers_only_that_server(tmp_path):
    engine = _engine(tmp_path, "always-ask", allow=["Mcp(git:*)"], deny=["Mcp(time:convert_time)"])
    assert engine.evaluate(_call("git", "git_commit", read_only=False)).decision is Decision.ALLOW
    assert engine.evaluate(_call("gitx", "git_status")).decision is Decision.ASK
    assert engine.evaluate(_call("time", "get_current_time")).decision is Decision.ASK
    assert engine.evaluate(_call("time", "convert_time")).decision is Decision.DENY


def test_ask_rules_beat_allow_rules_and_declarations(tmp_path):
    engine = _engine(tmp_path, "autonomous-trusted", allow=["Mcp(git:*)"], ask=["Mcp(git:git_reset)"])
    verdict = engine.evaluate(_call("git", "git_reset", read_only=False))
    assert verdict.decision is Decision.ASK and verdict.rule == "ask:Mcp(git:git_reset)"


def test_a_servers_declarations_never_stand_in_for_approval(tmp_path):
    """A "read-only" MCP tool may read anything its server can, unchecked by Seepient: the claim shapes the
    reasons a person reads, but only autonomous-trusted proceeds without asking."""
    closed_read = _call("time", "get_current_time")
    open_read = _call("search", "query", open_world=True)
    write = _call("git", "git_commit", read_only=False)
    expected = {
        "always-ask": (Decision.ASK, Decision.ASK, Decision.ASK),
        "ask-untrusted": (Decision.ASK, Decision.ASK, Decision.ASK),
        "auto": (Decision.ASK, Decision.ASK, Decision.ASK),
        "autonomous-trusted": (Decision.ALLOW, Decision.ALLOW, Decision.ALLOW),
    }
    for mode, decisions in expected.items():
        engine = _engine(tmp_path, mode)
        got = tuple(engine.evaluate(a).decision for a in (closed_read, open_read, write))
        assert got == decisions, mode
    reasons = " ".join(_engine(tmp_path).evaluate(write).reasons)
    assert "does not declare git_commit read-only" in reasons


def test_exposed_names_respect_the_64_character_rule():
    assert exposed_name("time", "get_current_time") == ("mcp__time__get_current_time", "")
    name, why = exposed_name("s", "x" * 57)
    assert name is None and "65 characters" in why and "at most 64" in why
    assert exposed_name("s", "x" * 56)[0] == "mcp__s__" + "x" * 56  # exactly 64
    name, why = exposed_name("s", "tool.with.dots")
    assert name is None and "characters" in why


def test_results_show_text_and_summarise_other_content():
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="hello"),
            types.ImageContent(type="image", data="QUJD" * 100, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///x.bin", blob="AAAA", mime_type="application/zip"
                ),
            ),
        ]
    )
    text = result_text(result)
    assert text.startswith("hello\n[image content, image/png, about 300 bytes; not shown]")
    assert "[binary resource file:///x.bin, application/zip; not shown]" in text
    assert "QUJD" not in text and "AAAA" not in text
    structured = types.CallToolResult(content=[], structured_content={"a": 1})
    assert json.loads(result_text(structured)) == {"a": 1}


def _load(tmp_path: Path, user: dict | None = None, project: dict | None = None):
    workspace = tmp_path / "ws"
    (workspace / ".seepient").mkdir(parents=True, exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if user is not None:
        (home / "settings.json").write_text(json.dumps(user))
    if project is not None:
        (workspace / ".seepient" / "settings.json").write_text(json.dumps(project))
    return load_settings(workspace, paths=SeepientPaths(home=home), managed_file=tmp_path / "no-managed.json")


def test_mcp_server_settings_are_checked_with_clear_errors(tmp_path):
    settings = _load(tmp_path, {"mcpServers": {"time": {"command": "mcp-server-time", "env": {"A": "1"}}}})
    server = settings.mcp_servers["time"]
    assert server.transport == "stdio" and server.env == {"A": "1"}
    assert (
        _load(tmp_path, {"mcpServers": {"r": {"url": "https://example.com/mcp"}}}).mcp_servers["r"].transport
        == "http"
    )
    cases = [
        ({"a": {"command": "x", "url": "https://example.com"}}, "not both or neither"),
        ({"a": {}}, "not both or neither"),
        ({"a": {"url": "ftp://example.com"}}, "must start with http"),
        ({"my__server": {"command": "x"}}, "without '__'"),
        ({"bad name": {"command": "x"}}, "letters, digits"),
    ]
    for servers, message in cases:
        with pytest.raises(SettingsError, match=message):
            _load(tmp_path, {"mcpServers": servers})


@pytest.mark.parametrize("key", ["enabledProjectMcpServers", "enabled_project_mcp_servers"])
def test_a_project_cannot_enable_its_own_servers(tmp_path, key):
    settings = _load(tmp_path, project={key: ["*"]})
    assert settings.enabled_project_mcp_servers == []
    assert settings.project is not None
    (ignored,) = settings.project.ignored
    assert ignored.key == "enabledProjectMcpServers" and "cannot approve its own MCP servers" in ignored.why
    assert _load(
        tmp_path, user={"enabledProjectMcpServers": ["x"]}, project={}
    ).enabled_project_mcp_servers == ["x"]


def test_the_terminal_prompt_shows_every_argument_of_an_mcp_call():
    long_value = "x" * 500 + "-the-end"
    draft = _call("git", "git_commit", read_only=False)
    draft = draft.model_copy(
        update={"payload": draft.payload.model_copy(update={"arguments": {"message": long_value}})}
    )
    request = ApprovalRequest(session_id="s", action=draft, verdict=Verdict.ask("mode:ask-untrusted", "why"))
    shown = render_request(request, colour=False)
    assert "MCP tool:  git_commit of server git" in shown and "-the-end" in shown
