"""MCP through a real session (replay model, real policy, approval, audit) against real MCP servers from PyPI
(``mcp-server-time``, ``mcp-server-git``) and a small server on the official SDK, over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.config.sections import McpServerSettings
from seepient.execution.mcp_transport import HostMcpConnector
from seepient.models.scripted import FunctionModel
from seepient.net import AddressPolicy
from seepient.protocol import ApprovalDecision, ErrorEvent, PermissionRequest, ToolResult
from seepient.protocol.actions import McpCall, McpServerStart
from seepient.runtime import Session, SessionOptions
from seepient.runtime import mcp as session_mcp
from seepient.tools.mcp import McpCallFailed, McpReport, McpServers, result_text
from seepient.tools.registry import ToolRegistry
from tests.conftest import BIN
from tests.runtime.conftest import audit_actions
from tests.support.approver import ScriptedApprover
from tests.support.ports import free_port

HELPER = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "helper_server.py"
TIME = {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}
GIT = {"command": str(BIN / "mcp-server-git")}


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _errors(events: list[Any]) -> list[ErrorEvent]:
    return [e for e in events if isinstance(e, ErrorEvent)]


def _user_settings(tmp_path: Path, settings: dict[str, Any]) -> None:
    home = tmp_path / "seepient-home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(settings))


def _project_settings(tmp_path: Path, settings: dict[str, Any]) -> None:
    folder = tmp_path / "ws" / ".seepient"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))


def _actions(session: Any, payload_type: str) -> list[dict[str, Any]]:
    return [
        line
        for line in audit_actions(session)
        if line.get("action", {}).get("payload", {}).get("type") == payload_type
    ]


def _server_pids(marker: str) -> list[int]:
    """Our child processes whose command line names ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), -1)
        if ppid == os.getpid() and marker.encode() in cmdline:
            found.append(int(entry))
    return found


async def test_time_tool_approved_by_a_person_runs_and_is_audited(tmp_path, make_session):
    _user_settings(tmp_path, {"mcpServers": {"time": TIME}})
    approver = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [_call("mcp__time__get_current_time", timezone="Europe/Paris"), {"text": "done"}],
        mode="always-ask",
        approver=approver,
    )
    try:
        outcome = await session.run("what time is it in Paris?")
    finally:
        await session.aclose()
    assert outcome.reason == "final"
    (result,) = _results(events)
    assert result.status == "ok", result.output
    assert json.loads(result.output)["timezone"] == "Europe/Paris"
    # always-ask asks even for a tool the server declares read-only; the person saw the exact call.
    (asked,) = approver.asked
    assert isinstance(asked.action.payload, McpCall)
    assert asked.action.payload.server == "time" and asked.action.payload.tool == "get_current_time"
    assert asked.action.payload.arguments == {"timezone": "Europe/Paris"}
    (call_record,) = _actions(session, "mcp")
    assert call_record["outcome"]["status"] == "ok"
    assert call_record["approval"]["decision"] == "approve_once"
    assert call_record["action"]["digest"] == result.digest
    (start_record,) = _actions(session, "mcp_server_start")
    assert start_record["outcome"]["status"] == "ok" and start_record["verdict"]["rule"] == "mcp:user_server"
    assert not _server_pids("mcp-server-time"), "closing the session stops the server"


async def test_deny_rule_refuses_a_tool_the_server_calls_read_only(tmp_path, make_session):
    _user_settings(tmp_path, {"mcpServers": {"time": TIME}, "permissions": {"deny": ["Mcp(time:*)"]}})
    session, events = make_session(
        [_call("mcp__time__get_current_time", timezone="UTC"), {"text": "done"}],
        mode="autonomous-trusted",
    )
    try:
        await session.run("time?")
    finally:
        await session.aclose()
    (result,) = _results(events)
    assert result.status == "denied"
    assert "Mcp(time:*)" in result.output
    (record,) = _actions(session, "mcp")
    assert record["outcome"]["status"] == "denied" and record["verdict"]["decision"] == "deny"


async def test_tools_the_user_allows_run_and_others_ask(tmp_path, make_session):
    calls = tmp_path / "calls.txt"
    server = {
        "command": sys.executable,
        "args": [str(HELPER)],
        "env": {"HELPER_CALLS_FILE": str(calls), "MY_SETTING": "1"},
    }
    _user_settings(
        tmp_path, {"mcpServers": {"helper": server}, "permissions": {"allow": ["Mcp(helper:environment)"]}}
    )
    environ = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-secret", "GITHUB_TOKEN": "ghp-secret"}
    session, events = make_session(
        [
            {
                "tool_calls": [
                    {"name": "mcp__helper__environment", "arguments": {}},
                    {"name": "mcp__helper__echo", "arguments": {"text": "hi"}},
                ]
            },
            {"text": "done"},
        ],
        environ=environ,
    )
    try:
        await session.run("look")
    finally:
        await session.aclose()
    environment, echo = _results(events)
    # Allowed by the user's rule: it runs without asking.
    assert environment.status == "ok"
    names = environment.output.split()
    assert "MY_SETTING" in names and "HELPER_CALLS_FILE" in names
    assert "OPENAI_API_KEY" not in names and "GITHUB_TOKEN" not in names
    # Not allowed: it asks, and a headless run refuses without sending anything.
    assert echo.status == "rejected" and "no one can answer" in echo.output
    assert calls.read_text().split() == ["environment"]


async def test_invalid_arguments_are_refused_before_anything_is_sent(tmp_path, make_session):
    calls = tmp_path / "calls.txt"
    server = {"command": sys.executable, "args": [str(HELPER)], "env": {"HELPER_CALLS_FILE": str(calls)}}
    _user_settings(tmp_path, {"mcpServers": {"helper": server}})
    session, events = make_session(
        [
            _call("mcp__helper__echo", text=5),
            _call("mcp__helper__echo", times=2),
            _call("mcp__helper__echo", text="ab", times=2),
            {"text": "done"},
        ],
        mode="autonomous-trusted",
    )
    try:
        await session.run("echo")
    finally:
        await session.aclose()
    wrong_type, missing, good = _results(events)
    assert wrong_type.status == "error" and "nothing was sent" in wrong_type.output
    assert "text: 5 is not of type 'string'" in wrong_type.output
    assert missing.status == "error" and "'text' is a required property" in missing.output
    assert good.status == "ok" and good.output == "abab"
    assert calls.read_text().split() == ["echo"]  # only the valid call reached the server
    assert len(_actions(session, "mcp")) == 1  # refused arguments never became actions


async def test_git_status_on_a_temporary_repository(tmp_path, make_session):
    repo = tmp_path / "ws"  # the session's workspace, made by make_session
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    (repo / "tracked.txt").write_text("one\n")
    subprocess.run([*git, "-C", str(repo), "add", "tracked.txt"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "first"], check=True)
    (repo / "tracked.txt").write_text("two\n")
    (repo / "fresh.txt").write_text("new\n")
    _user_settings(tmp_path, {"mcpServers": {"git": GIT}, "permissions": {"allow": ["Mcp(git:git_status)"]}})
    approver = ScriptedApprover((ApprovalDecision.REJECT, "not now"))
    session, events = make_session(
        [
            _call("mcp__git__git_status", repo_path=str(repo)),
            _call("mcp__git__git_commit", repo_path=str(repo), message="sneaky"),
            {"text": "done"},
        ],
        approver=approver,
    )
    try:
        await session.run("status?")
    finally:
        await session.aclose()
    status, commit = _results(events)
    assert status.status == "ok", status.output
    assert "modified:   tracked.txt" in status.output and "fresh.txt" in status.output
    # git_commit is not allowed: it asks, and the person's "no" reaches the model.
    assert commit.status == "rejected" and "not now" in commit.output
    (asked,) = approver.asked
    assert asked.action.tool == "mcp__git__git_commit"
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--oneline"], capture_output=True, text=True, check=True
    )
    assert len(log.stdout.splitlines()) == 1


async def test_server_killed_mid_session_is_reported_and_its_tools_disappear(tmp_path, make_session):
    _user_settings(tmp_path, {"mcpServers": {"time": TIME}, "permissions": {"allow": ["Mcp(time:*)"]}})
    session, events = make_session(
        [
            _call("mcp__time__get_current_time", timezone="UTC"),
            {"text": "first"},
            _call("mcp__time__get_current_time", timezone="UTC"),
            {"text": "second"},
        ]
    )
    try:
        await session.run("one")
        assert _results(events)[0].status == "ok"
        (pid,) = _server_pids("mcp-server-time")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while "mcp__time__get_current_time" in session.registry.names() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert "mcp__time__get_current_time" not in session.registry.names()
        outcome = await session.run("two")
    finally:
        await session.aclose()
    assert outcome.reason == "final" and outcome.text == "second"
    (gone,) = [e for e in _errors(events) if e.code == "mcp_server_gone"]
    assert "MCP server time went away" in gone.message
    later = _results(events)[1]
    assert later.status == "error" and "no longer available" in later.output and "went away" in later.output


async def test_server_dying_during_a_call_is_reported_in_the_result(tmp_path, make_session):
    helper = {"command": sys.executable, "args": [str(HELPER)], "callTimeoutMs": 1000}
    _user_settings(tmp_path, {"mcpServers": {"helper": helper}})
    session, events = make_session(
        [
            _call("mcp__helper__nap", seconds=30),
            _call("mcp__helper__crash"),
            _call("mcp__helper__echo", text="still there?"),
            {"text": "carried on"},
        ],
        mode="autonomous-trusted",
    )
    try:
        outcome = await session.run("crash it")
    finally:
        await session.aclose()
    assert outcome.reason == "final" and outcome.text == "carried on"
    nap, crash, echo = _results(events)
    # A call that outlives callTimeoutMs is abandoned; the server is still there for the next call.
    assert nap.status == "error" and "did not answer nap within 1000 ms" in nap.output
    assert crash.status == "error"
    assert "MCP server helper went away" in crash.output and "crashing on purpose" in crash.output
    assert "no longer available" in crash.output
    assert echo.status == "error" and echo.output.startswith("Tool mcp__helper__echo is no longer available")
    assert [e.code for e in _errors(events) if e.code != "mcp_tool_skipped"] == ["mcp_server_gone"]
    assert [r["outcome"]["status"] for r in _actions(session, "mcp")] == ["error", "error"]


async def test_servers_that_fail_to_start_are_reported_and_the_session_goes_on(tmp_path, make_session):
    _user_settings(
        tmp_path,
        {
            "mcpServers": {
                "crashes": {"command": "/bin/sh", "args": ["-c", "echo 'no config here' >&2; exit 3"]},
                "missing": {"command": "no-such-mcp-server-anywhere"},
                "silent": {"command": "/bin/sleep", "args": ["60"], "startupTimeoutMs": 1000},
                "time": TIME,
            },
            "permissions": {"allow": ["Mcp(time:*)"]},
        },
    )
    session, events = make_session([_call("mcp__time__get_current_time", timezone="UTC"), {"text": "fine"}])
    try:
        outcome = await session.run("go")
    finally:
        await session.aclose()
    assert outcome.reason == "final" and outcome.text == "fine"
    failures = {e.message.split(":")[0]: e for e in _errors(events) if e.code == "mcp_server_failed"}
    assert set(failures) == {
        "MCP server crashes did not start",
        "MCP server missing",
        "MCP server silent did not start",
    }
    assert "did not answer within 1 s" in failures["MCP server silent did not start"].message
    assert "no config here" in failures["MCP server crashes did not start"].message
    assert "was not found on PATH" in failures["MCP server missing"].message
    assert _results(events)[0].status == "ok"
    starts = {
        line["action"]["payload"]["server"]: line["outcome"]["status"]
        for line in _actions(session, "mcp_server_start")
    }
    assert starts == {"crashes": "error", "missing": "error", "silent": "error", "time": "ok"}
    assert not _server_pids("/bin/sleep"), "a server that timed out is stopped"


async def test_project_servers_do_not_start_without_consent(tmp_path, make_session):
    _project_settings(tmp_path, {"mcpServers": {"time": TIME}})
    # Trusted, so its servers are configured at all; starting one still needs a person's consent.
    session, events = make_session([{"text": "hello"}], auto_approve=True, project_trust=True)
    try:
        await session.run("hi")
    finally:
        await session.aclose()
    (refused,) = _errors(events)
    assert refused.code == "mcp_server_not_started" and "enabledProjectMcpServers" in refused.message
    assert not any(name.startswith("mcp__") for name in session.registry.names())
    (record,) = _actions(session, "mcp_server_start")
    assert record["outcome"]["status"] == "rejected" and record["action"]["payload"]["source"] == "project"


async def test_project_server_starts_when_a_person_approves_it(tmp_path, make_session):
    _project_settings(tmp_path, {"mcpServers": {"time": TIME}})
    approver = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session([{"text": "hello"}], approver=approver, project_trust=True)
    try:
        await session.run("hi")
        await session.mcp.ready()
        assert "mcp__time__get_current_time" in session.registry.names()
    finally:
        await session.aclose()
    (asked,) = approver.asked
    assert isinstance(asked.action.payload, McpServerStart)
    assert asked.action.payload.command == TIME["command"] and asked.verdict.rule == "mcp:project_server"
    assert any(isinstance(e, PermissionRequest) for e in events)


async def test_a_project_cannot_change_a_user_server_without_consent(tmp_path, make_session):
    # The project's entry merges over the user's server of the same name: what starts is the project's now.
    _user_settings(tmp_path, {"mcpServers": {"time": TIME}})
    redefined = {"command": TIME["command"], "args": ["--local-timezone", "Asia/Tokyo"]}
    _project_settings(tmp_path, {"mcpServers": {"time": redefined}})
    session, events = make_session([{"text": "hello"}], project_trust=True)
    try:
        await session.run("hi")
    finally:
        await session.aclose()
    assert [e.code for e in _errors(events)] == ["mcp_server_not_started"]


# -- streamable HTTP -------------------------------------------------------------------------------------


def _start_http_helper(log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, str(HELPER), "--http", str(port)], stdout=output, stderr=output
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, port
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"helper server exited: {log.read_text()}") from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("helper HTTP server did not start")


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    process, port = _start_http_helper(tmp_path_factory.mktemp("http") / "server.log")
    yield port
    process.terminate()
    process.wait(timeout=10)


async def test_streamable_http_server_allowed_by_user_net_settings(tmp_path, make_session, http_server):
    _user_settings(
        tmp_path,
        {
            "mcpServers": {"remote": {"url": f"http://127.0.0.1:{http_server}/mcp", "maxResultChars": 1000}},
            "net": {"allowRanges": ["127.0.0.1/32"], "allowPorts": [http_server]},
        },
    )
    session, events = make_session(
        [
            _call("mcp__remote__echo", text="over http ", times=2),
            _call("mcp__remote__picture"),
            _call("mcp__remote__echo", text="0123456789", times=500),
            {"text": "ok"},
        ],
        mode="autonomous-trusted",
    )
    try:
        await session.run("echo")
    finally:
        await session.aclose()
    # The one tool whose exposed name would pass 64 characters is skipped, with the reason reported.
    (skipped,) = _errors(events)
    assert skipped.code == "mcp_tool_skipped" and "at most 64" in skipped.message
    echo, picture, long = _results(events)
    assert echo.status == "ok" and echo.output == "over http over http "
    assert picture.status == "ok" and picture.output.startswith("a caption\n[image content, image/png")
    # Results are cut to the server's maxResultChars, keeping both ends.
    assert long.status == "ok" and len(long.output) <= 1000 and "cut from the middle" in long.output
    assert long.output.startswith("0123456789") and long.output.endswith("0123456789")


async def test_streamable_http_loopback_is_refused_without_net_settings(tmp_path, make_session, http_server):
    _user_settings(tmp_path, {"mcpServers": {"remote": {"url": f"http://127.0.0.1:{http_server}/mcp"}}})
    session, events = make_session([{"text": "ok"}])
    try:
        await session.run("hi")
        # Waited for, as by a session that needs its servers: one that ends first (a one-shot run whose model
        # never needed them) drops a start that has not run anything yet, and the refusal with it.
        await session.mcp.ready()
    finally:
        await session.aclose()
    (error,) = _errors(events)
    assert error.code == "mcp_server_failed" and "refused to connect" in error.message
    assert not any(name.startswith("mcp__") for name in session.registry.names())


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/mcp",
        "http://10.20.30.40/mcp",
        "http://[::ffff:169.254.169.254]/mcp",
        "http://2852039166/mcp",
    ],
)
async def test_streamable_http_to_metadata_or_private_addresses_is_refused(tmp_path, make_session, url):
    _user_settings(tmp_path, {"mcpServers": {"remote": {"url": url, "startupTimeoutMs": 5000}}})
    session, events = make_session([{"text": "ok"}])
    started = time.monotonic()
    try:
        await session.run("hi")
        await session.mcp.ready()  # as above: the start is waited for, not dropped with the session's end
    finally:
        await session.aclose()
    assert time.monotonic() - started < 4, "refused before any connection attempt"
    (error,) = _errors(events)
    assert error.code == "mcp_server_failed" and "refused to connect" in error.message


def _net(port: int) -> AddressPolicy:
    return AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[port])


async def test_a_name_resolving_to_a_metadata_address_is_refused(tmp_path):
    async def resolve(host: str, port: int) -> list[str]:
        return ["169.254.169.254"]

    reports: list[McpReport] = []
    connector = HostMcpConnector(tmp_path, net_policy=_net(80), resolver=resolve)
    servers = McpServers(ToolRegistry(), connector, report=reports.append)
    await servers.start({"remote": McpServerSettings(url="http://mcp.internal.test/mcp")})
    await servers.aclose()
    (report,) = reports
    assert report.code == "mcp_server_failed" and "169.254.169.254" in report.message


async def test_the_connection_stays_pinned_to_the_address_checked_at_start(tmp_path, http_server):
    answers: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        # The first answer passes the policy; any later one would point at the metadata service.
        answers.append(host)
        return ["127.0.0.1"] if len(answers) == 1 else ["169.254.169.254"]

    reports: list[McpReport] = []
    registry = ToolRegistry()
    connector = HostMcpConnector(tmp_path, net_policy=_net(http_server), resolver=rebinding)
    servers = McpServers(registry, connector, report=reports.append)
    await servers.start({"remote": McpServerSettings(url=f"http://mcp.example.test:{http_server}/mcp")})
    try:
        connection = servers.connections["remote"]
        for _ in range(3):
            result = await connection.call("echo", {"text": "x"})
            assert result_text(result) == "x"
    finally:
        await servers.aclose()
    assert answers == ["mcp.example.test"]
    assert [r.code for r in reports] == ["mcp_tool_skipped"]


async def test_an_http_server_that_goes_away_is_reported_and_its_tools_removed(tmp_path):
    process, port = _start_http_helper(tmp_path / "server.log")
    reports: list[McpReport] = []
    registry = ToolRegistry()
    servers = McpServers(registry, HostMcpConnector(tmp_path, net_policy=_net(port)), report=reports.append)
    try:
        await servers.start({"remote": McpServerSettings(url=f"http://127.0.0.1:{port}/mcp")})
        connection = servers.connections["remote"]
        assert result_text(await connection.call("echo", {"text": "up"})) == "up"
        process.kill()
        process.wait(timeout=10)
        with pytest.raises(McpCallFailed) as failed:
            await connection.call("echo", {"text": "down?"})
        assert failed.value.server_gone and "MCP server remote went away" in str(failed.value)
        assert [r.code for r in reports] == ["mcp_tool_skipped", "mcp_server_gone"]
        assert "went away" in (registry.gone_reason("mcp__remote__echo") or "")
        assert not any(name.startswith("mcp__remote__") for name in registry.names())
    finally:
        process.kill()
        await servers.aclose()


# -- servers start in the background: the model is not kept waiting for them ------------------------------


def _gated_helper(gate: Path) -> dict[str, Any]:
    """The helper server, held before it speaks MCP until ``gate`` exists: a start-up as slow as the test
    wants, with no timing in the test."""
    code = (
        "import pathlib, runpy, sys, time\n"
        f"gate = pathlib.Path({str(gate)!r})\n"
        "while not gate.exists():\n    time.sleep(0.02)\n"
        f"sys.argv = [{str(HELPER)!r}]\n"
        f"runpy.run_path({str(HELPER)!r}, run_name='__main__')\n"
    )
    return {"command": sys.executable, "args": ["-c", code]}


async def test_the_first_turn_does_not_wait_for_a_server_still_starting(tmp_path, make_session):
    gate = tmp_path / "gate"
    _user_settings(tmp_path, {"mcpServers": {"helper": _gated_helper(gate)}})
    session, events = make_session([{"text": "hello"}])
    try:
        # Were the turn held until the server is up, it would never end: the gate opens only afterwards.
        outcome = await asyncio.wait_for(session.run("hi"), timeout=120)
        assert outcome.reason == "final"
        assert not any(name.startswith("mcp__helper__") for name in session.registry.names())
        gate.touch()
        await asyncio.wait_for(session.mcp.ready(), timeout=120)
        assert "mcp__helper__echo" in session.registry.names()
    finally:
        gate.touch()
        await session.aclose()
    (start,) = _actions(session, "mcp_server_start")
    assert start["outcome"]["status"] == "ok", start["outcome"]


async def test_the_sdk_loads_only_once_the_first_request_is_answered(tmp_path, monkeypatch):
    # Importing the SDK on a thread holds the GIL, which would delay the request being built and sent: the
    # start waits for the model's first answer (here a model that thinks for a fifth of a second first).
    import seepient.runtime.mcp as session_mcp

    order: list[str] = []
    load = session_mcp._load_mcp_sdk
    monkeypatch.setattr(session_mcp, "_load_mcp_sdk", lambda: (order.append("sdk"), load()))

    async def slow_to_answer(request: Any) -> dict[str, Any]:
        order.append("request")
        await asyncio.sleep(0.2)
        return {"text": "hello"}

    _user_settings(tmp_path, {"mcpServers": {"helper": {"command": sys.executable, "args": [str(HELPER)]}}})
    (tmp_path / "ws").mkdir()
    session = Session.open(
        SessionOptions(
            workspace=tmp_path / "ws",
            model=FunctionModel(slow_to_answer),
            paths=SeepientPaths(home=tmp_path / "seepient-home"),
        )
    )
    session.subscribe(lambda event: event.type == "text_delta" and order.append("answer"))
    try:
        await asyncio.wait_for(session.run("hi"), timeout=120)
        await asyncio.wait_for(session.mcp.ready(), timeout=120)
        assert "mcp__helper__echo" in session.registry.names()
    finally:
        await session.aclose()
    assert order[:3] == ["request", "answer", "sdk"], order


async def test_a_call_to_a_tool_of_a_server_still_starting_waits_for_it(tmp_path, make_session):
    gate = tmp_path / "gate"
    _user_settings(tmp_path, {"mcpServers": {"helper": _gated_helper(gate)}})
    session, events = make_session(
        [_call("mcp__helper__echo", text="hi", times=2), {"text": "done"}], mode="autonomous-trusted"
    )
    loop = asyncio.get_running_loop()
    try:
        # The model calls the tool before the server is up; the call waits for the start instead of
        # failing as an unknown tool.
        loop.call_later(0.3, gate.touch)
        outcome = await asyncio.wait_for(session.run("go"), timeout=120)
    finally:
        gate.touch()
        await session.aclose()
    assert outcome.reason == "final"
    (result,) = _results(events)
    assert result.status == "ok" and result.output == "hihi", result.output


async def test_a_session_closed_while_its_server_starts_leaves_no_process_and_an_outcome(
    tmp_path, make_session
):
    gate = tmp_path / "gate"
    _user_settings(tmp_path, {"mcpServers": {"helper": _gated_helper(gate)}})
    session, events = make_session([{"text": "hello"}])
    await session.run("hi")
    for _ in range(600):  # the background start runs the server's command (then waits at the gate)
        if _server_pids(str(gate)):
            break
        await asyncio.sleep(0.02)
    assert _server_pids(str(gate)), "the server's command never ran"
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, gate.touch)
    await asyncio.wait_for(session.aclose(), timeout=120)
    assert not _server_pids(str(gate)), "closing the session stops the server it was starting"
    (start,) = _actions(session, "mcp_server_start")
    assert start["outcome"]["status"] in {"ok", "error"}, "every start intent has its outcome"


def _marking_server(marker: Path, audit_log: Path) -> dict[str, Any]:
    """A server command that, once run, writes into ``marker`` whether the audit log already held its start's
    intent, then exits (its start then fails, which is reported)."""
    code = (
        "import pathlib\n"
        f"log = pathlib.Path({str(audit_log)!r})\n"
        "text = log.read_text() if log.exists() else ''\n"
        "seen = any('mcp_server_start' in line and '\"intent\"' in line for line in text.splitlines())\n"
        f"pathlib.Path({str(marker)!r}).write_text('intent first' if seen else 'no intent')\n"
    )
    return {"command": sys.executable, "args": ["-c", code]}


async def test_a_server_start_runs_only_after_its_intent_is_in_the_log(tmp_path, make_session):
    marker = tmp_path / "started"
    audit_log = tmp_path / "seepient-home" / "audit.log"
    _user_settings(tmp_path, {"mcpServers": {"marking": _marking_server(marker, audit_log)}})
    session, _ = make_session([{"text": "hello"}])
    assert session.audit.path == audit_log
    await session.run("hi")
    await asyncio.wait_for(session.mcp.ready(), timeout=120)  # not dropped with the session's end, as above
    await asyncio.wait_for(session.aclose(), timeout=120)
    assert marker.read_text() == "intent first"
    (start,) = _actions(session, "mcp_server_start")
    assert start["outcome"]["status"] == "error", "a server that exits at once did not start"


async def test_a_server_whose_intent_the_log_refuses_never_starts_and_is_reported(tmp_path, make_session):
    marker = tmp_path / "started"
    audit_log = tmp_path / "seepient-home" / "audit.log"
    _user_settings(tmp_path, {"mcpServers": {"marking": _marking_server(marker, audit_log)}})
    session, events = make_session([{"text": "hello"}])
    audit_log.write_text("not a record\n")  # a log whose last line is no record refuses to take more
    outcome = await session.run("hi")
    # Waited for, as in the refusal tests above: a session ending first drops a start that has run nothing.
    await asyncio.wait_for(session.mcp.ready(), timeout=120)
    await asyncio.wait_for(session.aclose(), timeout=120)
    assert outcome.reason == "final", "the conversation goes on without the server"
    assert not marker.exists(), "no record, no start"
    (report,) = [e for e in events if isinstance(e, ErrorEvent) and e.code == "mcp_server_failed"]
    assert "audit log refused its record" in report.message and "marking" in report.message


async def test_a_session_closed_before_its_servers_run_starts_none_and_records_nothing(
    tmp_path, make_session, monkeypatch
):
    marker = tmp_path / "started"
    audit_log = tmp_path / "seepient-home" / "audit.log"
    _user_settings(tmp_path, {"mcpServers": {"marking": _marking_server(marker, audit_log)}})
    importing, release, imported = threading.Event(), threading.Event(), threading.Event()

    def slow_sdk_import() -> None:  # the SDK's import, as long as a fresh process's
        importing.set()
        release.wait(60)
        imported.set()

    monkeypatch.setattr(session_mcp, "_load_mcp_sdk", slow_sdk_import)
    session, _ = make_session([{"text": "hello"}])
    try:
        await session.run("hi")
        assert await asyncio.to_thread(importing.wait, 30), "the background start never began"
        await asyncio.wait_for(session.aclose(), timeout=120)
        assert not imported.is_set(), "closing did not wait for the import"
    finally:
        release.set()
    assert not marker.exists(), "a one-shot session that never needed the server does not start it"
    assert _actions(session, "mcp_server_start") == [], "nothing ran, so nothing is recorded"
