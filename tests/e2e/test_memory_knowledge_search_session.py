"""memory, knowledge_search and web_search through a real Session (replay model, real policy, approval broker,
executor and audit log): approved and denied cases, memory carried into the next session's prompt, and an API
key that never reaches events or the audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.context.knowledge import KnowledgeIndex
from seepient.protocol import ApprovalDecision, PermissionRequest, ToolResult
from tests.net.local_http import LocalHttpServer, Reply
from tests.runtime.conftest import (
    audit_actions,
    make_session_fixture,  # noqa: F401 - registers the fixture
)
from tests.support.approver import ScriptedApprover

KEY = "sk-session-key-93b1d7"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _home(tmp_path: Path) -> Path:
    return tmp_path / "seepient-home"


def _user_settings(tmp_path: Path, data: dict[str, Any]) -> None:
    home = _home(tmp_path)
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(data))


# -- memory ---------------------------------------------------------------------------------------------


async def test_memory_write_is_approved_audited_and_read_back_next_session(
    make_session, tmp_path: Path
) -> None:
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [
            _call(
                "memory", command="create", path="/memories/project/facts.md", file_text="Tests: pytest -q\n"
            ),
            _call("memory", command="view", path="/memories"),
            {"text": "noted"},
        ],
        approver=person,
    )
    await session.run("remember how to run the tests")
    created, viewed = _results(events)
    assert created.status == "ok" and viewed.status == "ok" and "facts.md" in viewed.output
    assert len(person.asked) == 1  # the write asked; the view did not
    assert "memory" in person.asked[0].action.summary.lower()
    memory_file = SeepientPaths(home=_home(tmp_path)).memory_dir("project", session.workspace) / "facts.md"
    assert memory_file.read_text() == "Tests: pytest -q\n"
    records = audit_actions(session)
    assert [r["action"]["tool"] for r in records] == ["memory", "memory"]
    assert records[0]["action"]["payload"]["change"]["new_content"] == "Tests: pytest -q\n"
    assert records[0]["approval"]["decision"] == "approve_once" and records[0]["outcome"]["status"] == "ok"
    await session.aclose()

    later, _ = make_session([{"text": "hi"}])
    prompt = later.context.system_prompt()
    assert "# Memory" in prompt and "## /memories/project/facts.md\nTests: pytest -q" in prompt
    await later.aclose()


async def test_memory_write_denied_by_rule_or_rejected_writes_nothing(make_session, tmp_path: Path) -> None:
    person = ScriptedApprover((ApprovalDecision.REJECT, "do not keep notes"))
    session, events = make_session(
        [_call("memory", command="create", path="/memories/user/u.md", file_text="x"), {"text": "ok"}],
        approver=person,
    )
    await session.run("x")
    (rejected,) = _results(events)
    assert rejected.status == "rejected" and "do not keep notes" in rejected.output
    await session.aclose()

    _user_settings(tmp_path, {"permissions": {"deny": ["memory"]}})
    session, events = make_session(
        [_call("memory", command="create", path="/memories/user/u.md", file_text="x"), {"text": "ok"}],
        auto_approve=True,
    )
    await session.run("x")
    (denied,) = _results(events)
    assert denied.status == "denied" and "deny rule" in denied.output
    assert not (_home(tmp_path) / "memory").exists()
    assert audit_actions(session)[-1]["outcome"]["status"] == "denied"
    await session.aclose()


async def test_a_model_cannot_reach_settings_through_memory_paths(make_session, tmp_path: Path) -> None:
    _user_settings(tmp_path, {"permissions": {"deny": []}})
    settings = _home(tmp_path) / "settings.json"
    before = settings.read_bytes()
    session, events = make_session(
        [
            _call(
                "memory", command="create", path="/memories/project/../../../settings.json", file_text="{}"
            ),
            _call("memory", command="create", path="/memories/../settings.json", file_text="{}"),
            _call("write_file", path=str(settings), content="{}"),
            {"text": "ok"},
        ],
        mode="autonomous-trusted",
    )
    await session.run("x")
    results = _results(events)
    assert [r.status for r in results] == ["error", "error", "denied"]
    assert settings.read_bytes() == before
    await session.aclose()


# -- knowledge_search -----------------------------------------------------------------------------------


def _build_index(tmp_path: Path, workspace: Path) -> None:
    (workspace / "runbook.md").write_text("# Backups\n\nBackups run nightly at 02:00 and are kept 14 days.\n")
    target = SeepientPaths(home=_home(tmp_path)).knowledge_index(workspace)
    with KnowledgeIndex(target, writable=True) as index:
        index.update([workspace], workspace=workspace)


async def test_knowledge_search_runs_without_asking_and_is_audited(make_session, tmp_path: Path) -> None:
    person = ScriptedApprover()
    session, events = make_session(
        [_call("knowledge_search", query="when do backups run"), {"text": "nightly"}], approver=person
    )
    _build_index(tmp_path, session.workspace)
    await session.run("when do backups run?")
    (result,) = _results(events)
    assert result.status == "ok" and "runbook.md:1-3" in result.output and "02:00" in result.output
    assert person.asked == []
    (record,) = audit_actions(session)
    assert record["action"]["payload"] == {
        "type": "knowledge_search",
        "query": "when do backups run",
        "limit": 8,
    }
    assert record["verdict"]["decision"] == "allow"
    await session.aclose()


async def test_knowledge_search_denied_and_asked_by_rules(make_session, tmp_path: Path) -> None:
    _user_settings(tmp_path, {"permissions": {"deny": ["knowledge_search"]}})
    session, events = make_session([_call("knowledge_search", query="backups"), {"text": "ok"}])
    _build_index(tmp_path, session.workspace)
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "02:00" not in result.output
    await session.aclose()

    _user_settings(tmp_path, {"permissions": {"ask": ["knowledge_search"]}})
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [_call("knowledge_search", query="backups"), {"text": "ok"}], approver=person
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "ok" and "02:00" in result.output and len(person.asked) == 1
    await session.aclose()


# -- web_search -----------------------------------------------------------------------------------------


@pytest.fixture
async def brave() -> Any:
    server = await LocalHttpServer().start()
    answer = {
        "web": {"results": [{"title": "Result", "url": "https://r.example/", "description": "snippet"}]}
    }
    server.routes["/search"] = lambda seen: Reply(
        200, {"content-type": "application/json"}, json.dumps(answer).encode()
    )
    yield server
    await server.close()


def _web_settings(tmp_path: Path, server: LocalHttpServer, **permissions: list[str]) -> None:
    # What an operator writes to reach an internal search service: the backend, and loopback opened in `net`.
    _user_settings(
        tmp_path,
        {
            "webSearch": {"backend": "brave", "url": server.url("/search"), "apiKeyEnv": "SEARCH_KEY"},
            "net": {"allowRanges": ["127.0.0.1/32"], "allowPorts": [server.port]},
            "permissions": permissions,
        },
    )


async def test_web_search_approved_and_the_key_stays_secret(make_session, tmp_path: Path, brave) -> None:
    _web_settings(tmp_path, brave)
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [_call("web_search", query="seepient", limit=3), {"text": "found"}],
        approver=person,
        environ={"SEARCH_KEY": KEY, "PATH": "/usr/bin:/bin"},
    )
    await session.run("search")
    (result,) = _results(events)
    assert result.status == "ok" and "https://r.example/" in result.output
    assert brave.seen[-1].headers["x-subscription-token"] == KEY
    assert any(isinstance(e, PermissionRequest) for e in events)
    everything = json.dumps([e.model_dump(mode="json") for e in events]) + session.audit.path.read_text()
    assert KEY not in everything
    assert "SEARCH_KEY" in everything  # the variable's name is what is recorded
    await session.aclose()


async def test_web_search_denied_by_a_fetch_rule_never_contacts_the_backend(
    make_session, tmp_path: Path, brave
) -> None:
    _web_settings(tmp_path, brave, deny=["Fetch(domain:127.0.0.1)"])
    session, events = make_session(
        [_call("web_search", query="seepient"), {"text": "ok"}],
        auto_approve=True,
        environ={"SEARCH_KEY": KEY, "PATH": "/usr/bin:/bin"},
    )
    await session.run("search")
    (result,) = _results(events)
    assert result.status == "denied" and "Fetch(domain:127.0.0.1)" in result.output
    assert brave.seen == []
    await session.aclose()
