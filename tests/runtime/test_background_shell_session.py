"""The background shell through a real Session: approval binds to the background start, output reads are
allowed without asking, kills are audited on their own, and the session's end kills what still runs."""

from __future__ import annotations

import asyncio
from typing import Any

from seepient.protocol import ApprovalDecision, PermissionRequest, ToolCall, ToolResult
from tests.execution.exec_helpers import unique_sleep_seconds, wait_for_pids, wait_until_gone
from tests.runtime.conftest import audit_actions
from tests.support.approver import ScriptedApprover


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _background(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command, "run_in_background": True}}]}


async def _read_until_ended(session: Any, process_id: str) -> str:
    seen = ""
    for n in range(300):
        result = await session.perform(
            ToolCall(id=f"call_out_{n}", name="shell_output", arguments={"id": process_id})
        )
        assert result.status == "ok", result.message
        text = (
            result.message.content if isinstance(result.message.content, str) else str(result.message.content)
        )
        seen += text + "\n"
        if "has ended" in text:
            return seen
        await asyncio.sleep(0.05)
    raise AssertionError(f"{process_id} did not end: {seen}")


async def test_a_rejected_background_command_never_starts(make_session: Any) -> None:
    person = ScriptedApprover((ApprovalDecision.REJECT, "not now"))
    session, events = make_session([_background("touch started; sleep 30"), {"text": "ok"}], approver=person)
    try:
        await session.run("start it")
        (result,) = _results(events)
        assert result.status == "rejected" and "not now" in result.output
        assert person.asked[0].action.payload.background is True
        assert person.asked[0].action.summary.startswith("Start in the background: touch started")
        await asyncio.sleep(0.3)
        assert not (session.workspace / "started").exists()
        assert [line["outcome"]["status"] for line in audit_actions(session)] == ["rejected"]
    finally:
        await session.aclose()


async def test_an_approved_background_command_runs_is_read_and_killed_through_the_pipeline(
    make_session: Any,
) -> None:
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    sleep = unique_sleep_seconds()
    session, events = make_session(
        [_background(f"touch started; echo ready; sleep {sleep}"), {"text": "started"}], approver=person
    )
    try:
        await session.run("start it")
        (started,) = _results(events)
        assert started.status == "ok", started.output
        process_id = started.data["process_id"]
        assert process_id.startswith("bg_") and process_id in started.output
        pids = wait_for_pids("sleep", sleep)
        asks_before = len([e for e in events if isinstance(e, PermissionRequest)])

        read = await session.perform(
            ToolCall(id="call_read", name="shell_output", arguments={"id": process_id})
        )
        assert read.status == "ok" and "is running" in str(read.message.content)
        killed = await session.perform(
            ToolCall(id="call_kill", name="shell_kill", arguments={"id": process_id})
        )
        assert killed.status == "ok" and "killed by shell_kill" in str(killed.message.content)
        assert wait_until_gone(pids) == []
        # Reading and killing a process this session started needed no person.
        assert len([e for e in events if isinstance(e, PermissionRequest)]) == asks_before == 1

        for made_up in ("bg_00000000000000000000", str(pids[0])):
            refused = await session.perform(
                ToolCall(id="call_bad", name="shell_kill", arguments={"id": made_up})
            )
            assert refused.status == "error"

        records = audit_actions(session)
        tools = [(r["action"]["tool"], r["outcome"]["status"]) for r in records if "action" in r]
        assert tools[:3] == [("shell", "ok"), ("shell_output", "ok"), ("shell_kill", "ok")]
        start_record = records[0]
        assert start_record["action"]["payload"]["background"] is True
        assert start_record["approval"]["decision"] == "approve_once"
        assert records[2]["action"]["payload"] == {
            "type": "process_control",
            "operation": "kill",
            "process_id": process_id,
        }
    finally:
        await session.aclose()


async def test_another_sessions_process_cannot_be_read_or_killed(make_session: Any) -> None:
    sleep = unique_sleep_seconds()
    owner, owner_events = make_session([_background(f"sleep {sleep}"), {"text": "ok"}], auto_approve=True)
    other, _ = make_session([{"text": "ok"}], auto_approve=True)
    try:
        await owner.run("start")
        process_id = _results(owner_events)[0].data["process_id"]
        pids = wait_for_pids("sleep", sleep)
        for name in ("shell_output", "shell_kill"):
            result = await other.perform(ToolCall(id="call_x", name=name, arguments={"id": process_id}))
            assert result.status == "error" and "no background process" in str(result.message.content)
        assert wait_until_gone(pids, deadline_s=0.3) == pids  # still running
    finally:
        await other.aclose()
        await owner.aclose()
    # The owner's end killed it.
    assert wait_until_gone(pids) == []


async def test_output_and_exit_status_reach_the_model(make_session: Any) -> None:
    session, events = make_session(
        [_background("echo hello; echo oops >&2; exit 4"), {"text": "ok"}], auto_approve=True
    )
    try:
        await session.run("go")
        process_id = _results(events)[0].data["process_id"]
        text = await _read_until_ended(session, process_id)
        assert "stdout (new):\nhello" in text and "stderr (new):\noops" in text and "exit code 4" in text
    finally:
        await session.aclose()


async def test_a_policy_denied_background_command_is_refused_like_a_foreground_one(make_session: Any) -> None:
    session, events = make_session([_background("cat ~/.ssh/id_rsa"), {"text": "ok"}], auto_approve=True)
    try:
        await session.run("go")
        (result,) = _results(events)
        assert result.status == "denied" and "Denied by policy" in result.output
        assert "process_id" not in result.data
    finally:
        await session.aclose()


async def test_the_settings_bound_how_many_background_commands_run(make_session: Any, tmp_path: Any) -> None:
    home = tmp_path / "seepient-home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text('{"execution": {"maxBackgroundProcesses": 1}}')
    session, events = make_session(
        [_background("sleep 60"), _background("sleep 61"), {"text": "ok"}], auto_approve=True
    )
    try:
        await session.run("go")
        first, second = _results(events)
        assert first.status == "ok"
        assert second.status == "error" and "the limit of 1 background process is reached" in second.output
    finally:
        await session.aclose()
