"""``todo_write`` through the whole pipeline: a ``state`` action policy allows without asking (unless a rule
names the tool), audited, kept by the session, announced as ``todo_updated`` and shown by every surface."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from seepient.config import SeepientPaths
from seepient.protocol import (
    ApprovalDecision,
    PermissionRequest,
    TodoItem,
    TodoUpdated,
    ToolResult,
)
from seepient.runtime import SessionOptions
from seepient.surfaces.cli.render import HumanRenderer, JsonRenderer
from tests.runtime.conftest import (
    audit_actions,
    make_session_fixture,  # noqa: F401 - registers the fixture
)
from tests.support.approver import ScriptedApprover


def _todo(*items: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": list(items)}}]}


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _updates(events: list[Any]) -> list[TodoUpdated]:
    return [e for e in events if isinstance(e, TodoUpdated)]


def _rules(tmp_path: Path, **permissions: list[str]) -> None:
    home = tmp_path / "seepient-home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"permissions": permissions}))


async def test_the_list_is_kept_announced_and_audited_without_asking(make_session):
    first = _todo(
        {"content": "Read the failing test", "status": "completed"},
        {"content": "Fix calc.add", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
    )
    second = _todo(
        {"id": "1", "content": "Read the failing test", "status": "completed"},
        {"id": "2", "content": "Fix calc.add", "status": "completed"},
        {"id": "3", "content": "Run the tests", "status": "in_progress"},
    )
    approver = ScriptedApprover()  # no answers: asking at all would fail the test
    session, events = make_session([first, second, {"text": "ok"}], mode="always-ask", approver=approver)
    await session.run("x")
    assert approver.asked == [] and not any(isinstance(e, PermissionRequest) for e in events)
    one, two = _updates(events)
    assert [(i.id, i.status) for i in one.items] == [
        ("1", "completed"),
        ("2", "in_progress"),
        ("3", "pending"),
    ]
    assert [i.status for i in two.items] == ["completed", "completed", "in_progress"]
    assert session.todos == two.items
    results = _results(events)
    assert [r.status for r in results] == ["ok", "ok"]
    assert "[x] Read the failing test" in results[0].output and "[~] Fix calc.add" in results[0].output
    lines = audit_actions(session)
    assert [line["action"]["kind"] for line in lines] == ["state", "state"]
    assert lines[0]["verdict"]["rule"] == "state:session" and lines[0]["outcome"]["status"] == "ok"
    assert lines[1]["action"]["payload"]["value"][2]["status"] == "in_progress"


async def test_two_items_in_progress_are_refused_and_nothing_changes(make_session):
    session, events = make_session(
        [
            _todo({"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}),
            _todo(
                {"id": "x", "content": "a", "status": "pending"},
                {"id": "x", "content": "b", "status": "pending"},
            ),
            {"text": "ok"},
        ]
    )
    await session.run("x")
    both, duplicate = _results(events)
    assert both.status == "error" and "exactly one in_progress" in both.output
    assert duplicate.status == "error" and "unique" in duplicate.output
    assert _updates(events) == [] and session.todos == () and audit_actions(session) == []


async def test_a_deny_rule_naming_the_tool_refuses_it(make_session, tmp_path):
    _rules(tmp_path, deny=["todo_write"])
    session, events = make_session(
        [_todo({"content": "a", "status": "pending"}), {"text": "ok"}], auto_approve=True
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "todo_write" in result.output
    assert _updates(events) == [] and session.todos == ()
    (line,) = audit_actions(session)
    assert line["outcome"]["status"] == "denied" and line["verdict"]["rule"] == "deny:todo_write"


@pytest.mark.parametrize(
    ("answer", "status"), [(ApprovalDecision.APPROVE_ONCE, "ok"), (ApprovalDecision.REJECT, "rejected")]
)
async def test_an_ask_rule_sends_it_to_a_person(make_session, tmp_path, answer, status):
    _rules(tmp_path, ask=["todo_write"])
    approver = ScriptedApprover((answer, "no lists"))
    session, events = make_session(
        [_todo({"content": "a", "status": "pending"}), {"text": "ok"}], approver=approver
    )
    await session.run("x")
    (asked,) = approver.asked
    assert asked.action.kind == "state"
    (result,) = _results(events)
    assert result.status == status
    assert len(_updates(events)) == (1 if status == "ok" else 0)
    (line,) = audit_actions(session)
    assert line["outcome"]["status"] == ("ok" if status == "ok" else "rejected")


async def test_clearing_the_list(make_session):
    session, events = make_session(
        [
            _todo({"content": "a", "status": "pending"}),
            {"tool_calls": [{"name": "todo_write", "arguments": {"todos": []}}]},
            {"text": "ok"},
        ]
    )
    await session.run("x")
    assert [len(u.items) for u in _updates(events)] == [1, 0]
    assert session.todos == () and _results(events)[1].output == "Todo list cleared."


def test_the_cli_shows_the_list_and_json_carries_the_event() -> None:
    event = TodoUpdated(
        session_id="s",
        seq=3,
        items=(
            TodoItem(id="1", content="Read", status="completed"),
            TodoItem(id="2", content="Fix", status="in_progress"),
            TodoItem(id="3", content="Test", status="pending"),
        ),
    )
    out, err = io.StringIO(), io.StringIO()
    HumanRenderer(out=out, err=err)(event)
    assert out.getvalue() == ""
    assert err.getvalue().splitlines() == ["  todo (1/3 done)", "    ☑ Read", "    ▶ Fix", "    ☐ Test"]
    JsonRenderer(out=out)(event)
    line = json.loads(out.getvalue())
    assert line["type"] == "todo_updated" and [i["status"] for i in line["items"]] == [
        "completed",
        "in_progress",
        "pending",
    ]


def test_the_server_event_schema_includes_the_todo_event() -> None:
    from seepient.surfaces.server.event_schema import runtime_event_schema

    schema = runtime_event_schema()
    assert "TodoUpdated" in schema["$defs"]
    assert schema["$defs"]["TodoUpdated"]["properties"]["type"]["const"] == "todo_updated"
    assert "todo_updated" in json.dumps(schema["discriminator"])


async def test_the_tui_shows_the_list(tmp_path):
    from seepient.surfaces.tui.app import SeepientTui
    from seepient.surfaces.tui.widgets import TodoListView

    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.yaml"
    script.write_text(
        yaml.safe_dump(
            [
                _todo(
                    {"content": "Fix it", "status": "in_progress"},
                    {"content": "Test it", "status": "pending"},
                ),
                {"text": "done"},
            ]
        )
    )
    app = SeepientTui(
        SessionOptions(
            workspace=workspace, model=f"replay:{script}", paths=SeepientPaths(home=tmp_path / "h")
        )
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"go")
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if list(app.query(TodoListView)) and not app.working:
                break
        (view,) = app.query(TodoListView)
        assert [i.content for i in view.items] == ["Fix it", "Test it"]
        rendered = str(view.render())
        assert "todo · 0/2 done" in rendered and "▶ Fix it" in rendered and "☐ Test it" in rendered
