"""A session in an untrusted project: the project's mode, rules and MCP servers do not apply (and the session says
so); once trusted they do, an MCP server still waits for a person; "always for this project" answers are kept
per user (and per principal on a server), never in the repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seepient.config import SeepientPaths
from seepient.config.settings import inspect_project
from seepient.config.trust import TrustStore
from seepient.protocol import ApprovalDecision, PermissionRequest, ToolResult
from seepient.surfaces.sdk import Agent
from tests.conftest import BIN
from tests.support.approver import ScriptedApprover

TIME = {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}


def _project(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "ws" / ".seepient" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _trust(tmp_path: Path) -> None:
    paths = SeepientPaths(home=tmp_path / "seepient-home")
    workspace = tmp_path / "ws"
    TrustStore(paths.trust_store).trust(workspace, inspect_project(workspace, paths=paths).file.sha256)


async def test_an_untrusted_projects_mode_and_allow_rules_do_not_apply(make_session, tmp_path):
    _project(tmp_path, {"permissions": {"mode": "autonomous-trusted", "allow": ["Shell(touch:*)"]}})
    session, events = make_session([_call("shell", command="touch planted"), {"text": "ok"}])
    assert session.mode == "ask-untrusted"
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "rejected" and not (session.workspace / "planted").exists()
    warnings = " ".join(str(w) for w in session.context.warnings)
    assert "not trusted" in warnings and "permissions.mode" in warnings and "permissions.allow" in warnings

    _trust(tmp_path)
    trusted, events = make_session([_call("shell", command="touch made"), {"text": "ok"}])
    assert trusted.mode == "autonomous-trusted"
    await trusted.run("x")
    assert _results(events)[0].status == "ok" and (trusted.workspace / "made").exists()


async def test_a_stricter_project_mode_applies_without_trust(make_session, tmp_path):
    _project(tmp_path, {"permissions": {"mode": "always-ask"}})
    session, _ = make_session([{"text": "ok"}])
    assert session.mode == "always-ask"
    # What the user chooses for the run still wins: the flag is theirs.
    chosen, _ = make_session([{"text": "ok"}], mode="autonomous-trusted")
    assert chosen.mode == "autonomous-trusted"


async def test_an_untrusted_projects_mcp_server_is_never_started_nor_asked_about(make_session, tmp_path):
    marker = tmp_path / "started"
    _project(tmp_path, {"mcpServers": {"evil": {"command": "/bin/sh", "args": ["-c", f"touch {marker}"]}}})
    approver = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session([{"text": "hello"}], approver=approver)
    try:
        await session.run("hi")
    finally:
        await session.aclose()
    assert approver.asked == [] and not any(isinstance(e, PermissionRequest) for e in events)
    assert not marker.exists() and session.mcp.configured == {}
    assert any("mcpServers.evil" in str(w) for w in session.context.warnings)


async def test_a_trusted_projects_mcp_server_still_waits_for_a_person(make_session, tmp_path):
    _project(tmp_path, {"mcpServers": {"time": TIME}})
    _trust(tmp_path)
    session, events = make_session([{"text": "hello"}], auto_approve=True)  # -y is not consent
    try:
        await session.run("hi")
    finally:
        await session.aclose()
    assert [e.code for e in events if getattr(e, "code", None)] == ["mcp_server_not_started"]
    assert not any(name.startswith("mcp__") for name in session.registry.names())


async def test_approve_always_is_kept_per_user_and_never_in_the_repository(make_session, tmp_path):
    project = _project(tmp_path, {"permissions": {"deny": ["Read(.env)"]}})
    before = project.read_bytes()
    person = ScriptedApprover((ApprovalDecision.APPROVE_PROJECT, None))
    session, events = make_session([_call("shell", command="touch one"), {"text": "ok"}], approver=person)
    await session.run("x")
    assert _results(events)[0].status == "ok"
    assert project.read_bytes() == before
    paths = SeepientPaths(home=tmp_path / "seepient-home")
    rules = paths.workspace_rules(session.workspace)
    assert json.loads(rules.read_text())["permissions"]["allow"] == ["Shell(touch:*)"]
    assert oct(rules.stat().st_mode & 0o777) == oct(0o600)

    # A server keeps each principal's answers apart: alice's "always" is not bob's.
    alice, events = make_session(
        [_call("shell", command="touch two"), {"text": "ok"}],
        principal="alice",
        approver=ScriptedApprover((ApprovalDecision.APPROVE_PROJECT, None)),
    )
    await alice.run("x")
    assert paths.workspace_rules(session.workspace, "alice").is_file()
    bob_person = ScriptedApprover((ApprovalDecision.REJECT, None))
    bob, events = make_session(
        [_call("shell", command="touch three"), {"text": "ok"}], principal="bob", approver=bob_person
    )
    await bob.run("x")
    assert len(bob_person.asked) == 1 and not (bob.workspace / "three").exists()


def test_the_sdk_takes_the_users_sandbox_choice_never_the_projects(tmp_path):
    home = tmp_path / "seepient-home"
    workspace = tmp_path / "ws"
    script = tmp_path / "x.yaml"
    script.write_text("- text: ok\n")
    for execution in ({"sandbox": "off"}, {"sandbox": "off", "default_timeout_ms": 5000}):
        _project(tmp_path, {"execution": execution})
        for trusted in (False, True):  # even a trusted project cannot turn the sandbox off
            if trusted:
                _trust(tmp_path)
            agent = Agent(workspace=workspace, model=f"replay:{script}", home=home)
            assert agent.session.sandbox == "auto"
    (home / "settings.json").write_text(json.dumps({"execution": {"sandbox": "off"}}))
    _project(tmp_path, {})
    assert Agent(workspace=workspace, model=f"replay:{script}", home=home).session.sandbox == "off"
