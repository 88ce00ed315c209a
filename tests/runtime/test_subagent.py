"""Sub-agents through the whole pipeline: the replay model plays the parent's turns and, after its ``agent``
call, the child's turns from the same script. A child never gets more than its parent: tools it lacks, a
looser mode, what a deny rule forbids and what a session grant covered for the parent are all refused; depth
and concurrency are bounded; every child action is audited under the parent's session id."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import TypeAdapter

from seepient.audit.verify import verify_log
from seepient.config import SeepientPaths
from seepient.config.sections import ModelSettings
from seepient.models.router import ModelRouter
from seepient.protocol import (
    ApprovalDecision,
    ApprovedAction,
    Completion,
    Message,
    ModelRequest,
    ModelStreamEvent,
    PermissionRequest,
    RuntimeEvent,
    SubagentEvent,
    ToolCall,
    ToolResult,
)
from seepient.runtime import Session, SessionOptions
from seepient.tools.base import ToolContext, ToolOutput
from tests.audit_view import merge_actions
from tests.conftest import BIN
from tests.git_helpers import git
from tests.support.approver import ScriptedApprover
from tests.support.scripts import new_script

from .conftest import ProbeTool

APPROVE = (ApprovalDecision.APPROVE_ONCE, None)
REJECT = (ApprovalDecision.REJECT, "not for a sub-agent")


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.workspace = (tmp_path / "ws").resolve()
        self.workspace.mkdir()
        (self.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (self.workspace / "secret.txt").write_text("the launch codes\n")
        self.home = tmp_path / "seepient-home"
        self.events: list[RuntimeEvent] = []

    def git_repo(self) -> None:
        git(self.workspace, "init", "-q", "-b", "main")
        git(self.workspace, "add", "calc.py")
        git(self.workspace, "commit", "-q", "-m", "init")

    def settings(self, data: dict[str, Any]) -> None:
        (self.workspace / ".seepient").mkdir(exist_ok=True)
        (self.workspace / ".seepient/settings.json").write_text(json.dumps(data))

    def open(self, turns: list[dict[str, Any]], **options: Any) -> Session:
        script = new_script(self.tmp, turns)
        options.setdefault("model", f"replay:{script}")
        session = Session.open(
            SessionOptions(workspace=self.workspace, paths=SeepientPaths(home=self.home), **options)
        )
        session.subscribe(self.events.append)
        return session

    def results(self, tool: str | None = None) -> list[ToolResult]:
        """Tool results of the session and, unwrapped from their relayed events, of its sub-agents, in order."""
        found = []
        for event in self.events:
            while isinstance(event, SubagentEvent):
                event = TypeAdapter(RuntimeEvent).validate_python(event.event)
            if isinstance(event, ToolResult) and (tool is None or event.tool == tool):
                found.append(event)
        return found

    def audit(self) -> list[dict[str, Any]]:
        """One entry per action (an intent merged with its outcome)."""
        path = self.home / "audit.log"
        return merge_actions(
            [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        )


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def _agent(**arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "agent", "arguments": arguments}]}


def _call(tool_name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool_name, "arguments": arguments}]}


async def test_child_runs_its_task_and_the_parent_gets_answer_actions_and_events(harness: Harness) -> None:
    approver = ScriptedApprover(APPROVE)
    session = harness.open(
        [
            _agent(task="Read calc.py and say what add does.", tools=["read_file", "grep"]),
            _call("read_file", path="calc.py"),  # the child's first step
            {"text": "add subtracts: it returns a - b."},  # the child's answer
            {"text": "The sub-agent found the bug."},  # the parent resumes
        ],
        approver=approver,
    )
    outcome = await session.run("find the bug")
    await session.aclose()

    assert outcome.reason == "final" and outcome.text == "The sub-agent found the bug."
    # The approval showed the task and the tools, and was asked by the session itself.
    (request,) = approver.asked
    assert request.action.tool == "agent" and request.agent is None
    assert "Read calc.py" in request.action.summary and "read_file, grep" in request.action.summary
    (result,) = harness.results("agent")
    assert result.status == "ok"
    assert "add subtracts: it returns a - b." in result.output
    assert "- read_file [ok]" in result.output
    child_id = result.data["agent_id"]
    (action,) = result.data["actions"]
    assert (action["tool"], action["status"]) == ("read_file", "ok") and action["line"]
    assert f"- read_file [ok] {action['line']}" in result.output
    # The child's events reached the parent's surfaces, tagged with the child.
    relayed = [e for e in harness.events if isinstance(e, SubagentEvent)]
    assert relayed and all(e.agent_id == child_id and e.session_id == session.id for e in relayed)
    assert [e.event["type"] for e in relayed][-1] == "turn_completed"
    assert any(e.event["type"] == "tool_result" and e.event["tool"] == "read_file" for e in relayed)
    # Every child action is audited with the parent's session id, and the log verifies.
    records = harness.audit()
    child_records = [r for r in records if r.get("session_id") == child_id]
    assert [r["action"]["tool"] for r in child_records] == ["read_file"]
    assert child_records[0]["parent_session_id"] == session.id
    parent_records = [r for r in records if r.get("session_id") == session.id]
    assert [r["action"]["tool"] for r in parent_records] == ["agent"]
    assert "parent_session_id" not in parent_records[0]
    report = verify_log(harness.home / "audit.log")
    # Each action that ran is two records (its intent and its outcome).
    assert report.ok and report.records == 2 * len(records)


async def test_a_tool_the_parent_lacks_is_refused_before_anything_asks(harness: Harness) -> None:
    approver = ScriptedApprover()
    session = harness.open(
        [
            _agent(task="run the tests", tools=["read_file", "shell"]),
            _agent(task="fetch it", tools=["no_such_tool"]),
            {"text": "I will do it myself."},
        ],
        approver=approver,
    )
    session.registry.disable("shell")
    await session.run("go")
    await session.aclose()
    first, second = harness.results("agent")
    assert first.status == "error" and "no tool 'shell'" in first.output
    assert second.status == "error" and "no tool 'no_such_tool'" in second.output
    assert approver.asked == []
    assert not any(isinstance(e, SubagentEvent) for e in harness.events)


async def test_a_looser_mode_is_refused_and_a_stricter_one_is_kept(harness: Harness) -> None:
    approver = ScriptedApprover(APPROVE, REJECT)
    session = harness.open(
        [
            _agent(task="t", mode="autonomous-trusted"),
            _agent(task="t", mode="auto"),
            _agent(task="t", mode="bypass"),
            _agent(task="write a file", mode="always-ask", tools=["write_file"]),
            _call("write_file", path="new.txt", content="x"),  # the child asks, the person rejects
            {"text": "child could not write"},
            {"text": "done"},
        ],
        approver=approver,
        mode="ask-untrusted",
    )
    await session.run("go")
    await session.aclose()
    loose = harness.results("agent")[:3]
    assert all(r.status == "error" and "looser than this session's ask-untrusted" in r.output for r in loose)
    (ok,) = harness.results("agent")[3:]
    assert ok.status == "ok" and "write_file [rejected]" in ok.output
    assert not (harness.workspace / "new.txt").exists()
    # The child's ask reached the parent's approver, labelled with the sub-agent and its mode.
    child_ask = approver.asked[1]
    assert child_ask.action.tool == "write_file" and child_ask.agent is not None
    assert ok.data["agent_id"] in child_ask.agent and "depth 1" in child_ask.agent
    assert child_ask.verdict.rule == "mode:always-ask"


async def test_the_parents_deny_rules_bind_the_child(harness: Harness) -> None:
    harness.settings({"permissions": {"deny": ["Read(secret.txt)", "Shell(rm:*)"]}})
    session = harness.open(
        [
            _agent(task="leak", tools=["read_file", "shell"]),
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "secret.txt"}},
                    {"name": "shell", "arguments": {"command": "rm -f calc.py"}},
                ]
            },
            {"text": "both refused"},
            {"text": "ok"},
        ],
        mode="autonomous-trusted",
    )
    await session.run("go")
    await session.aclose()
    statuses = {r.tool: r.status for r in harness.results() if r.tool != "agent"}
    assert statuses == {"read_file": "denied", "shell": "denied"}
    assert (harness.workspace / "calc.py").exists()
    denied = [r for r in harness.audit() if r.get("parent_session_id") == session.id]
    assert {r["verdict"]["rule"] for r in denied} == {"deny:Read(secret.txt)", "deny:Shell(rm:*)"}


async def test_a_session_grant_of_the_parent_does_not_cover_the_child(harness: Harness) -> None:
    approver = ScriptedApprover((ApprovalDecision.APPROVE_SESSION, None), APPROVE, REJECT)
    session = harness.open(
        [
            _call("shell", command="touch made-by-parent.txt"),
            _call("shell", command="touch made-by-parent.txt"),  # covered by the grant: not asked
            _agent(task="touch it too", tools=["shell"]),
            _call("shell", command="touch made-by-parent.txt"),  # the same digest, from the child
            {"text": "child was refused"},
            {"text": "done"},
        ],
        approver=approver,
    )
    await session.run("go")
    await session.aclose()
    shell = harness.results("shell")
    assert [r.status for r in shell] == ["ok", "ok", "rejected"]
    # Asked: the parent's first touch, the agent call, the child's touch (again, despite the grant).
    assert [r.action.tool for r in approver.asked] == ["shell", "agent", "shell"]
    assert approver.asked[0].action.digest == approver.asked[2].action.digest
    assert approver.asked[2].agent is not None
    child_record = [r for r in harness.audit() if r.get("parent_session_id") == session.id][0]
    assert child_record["outcome"]["status"] == "rejected"
    # The child's question reached the parent's stream as a permission request of its own, labelled, so a
    # surface answering from events sees it; it is not also buried in a relayed event.
    asked = [e.request for e in harness.events if isinstance(e, PermissionRequest)]
    assert [r.action.tool for r in asked] == ["shell", "shell", "agent", "shell"]  # the second met the grant
    assert asked[3].agent == approver.asked[2].agent and asked[3].request_id == approver.asked[2].request_id
    assert all(r.agent is None for r in asked[:3])
    relayed = [e.event["type"] for e in harness.events if isinstance(e, SubagentEvent)]
    assert "permission_request" not in relayed and "tool_result" in relayed


async def test_depth_limit(harness: Harness) -> None:
    harness.settings({"subagents": {"maxDepth": 1}})
    session = harness.open(
        [
            _agent(task="spawn another", tools=["agent"]),  # refused: agent cannot be given at depth 1
            _agent(task="spawn another"),  # all the parent's tools, without agent
            _agent(task="grandchild"),  # the child tries anyway: it has no agent tool
            {"text": "could not nest"},
            {"text": "done"},
        ],
        mode="autonomous-trusted",
    )
    await session.run("go")
    await session.aclose()
    results = harness.results("agent")
    assert results[0].status == "error" and "nest at most 1 deep" in results[0].output
    child_call = results[1]
    assert child_call.status == "error" and "Unknown tool 'agent'" in child_call.output
    assert results[2].status == "ok"
    assert "agent [error]" in results[2].output

    harness.settings({"subagents": {"maxDepth": 0}})
    flat = harness.open([{"text": "x"}])
    assert "agent" not in flat.registry.names()
    await flat.aclose()


async def test_grandchildren_are_audited_under_their_own_parent(harness: Harness) -> None:
    session = harness.open(
        [
            _agent(task="delegate", tools=["agent", "read_file"]),
            _agent(task="read", tools=["read_file"]),  # the child spawns a grandchild
            _call("read_file", path="calc.py"),  # the grandchild reads
            {"text": "grandchild done"},
            {"text": "child done"},
            {"text": "parent done"},
        ],
        mode="autonomous-trusted",
    )
    outcome = await session.run("go")
    await session.aclose()
    assert outcome.text == "parent done"
    child_id = harness.results("agent")[-1].data["agent_id"]
    grandchild_id = harness.results("agent")[0].data["agent_id"]
    by_session = {r["session_id"]: r for r in harness.audit()}
    assert by_session[child_id]["parent_session_id"] == session.id
    assert by_session[grandchild_id]["parent_session_id"] == child_id
    assert by_session[grandchild_id]["action"]["tool"] == "read_file"
    nested = [
        e for e in harness.events if isinstance(e, SubagentEvent) and e.event["type"] == "subagent_event"
    ]
    assert nested and nested[0].agent_id == child_id and nested[0].event["agent_id"] == grandchild_id
    assert verify_log(harness.home / "audit.log").ok


async def test_a_child_in_a_worktree_edits_there_and_not_in_the_main_checkout(harness: Harness) -> None:
    harness.git_repo()
    harness.settings({"permissions": {"deny": ["Read(secret.txt)"]}})
    approver = ScriptedApprover(APPROVE, APPROVE, APPROVE, REJECT)
    session = harness.open(
        [
            _call("worktree_create", name="fix"),
            _agent(
                task="fix add in calc.py",
                worktree="fix",
                tools=["read_file", "edit_file", "shell", "write_file"],
            ),
            _call("edit_file", path="calc.py", old_string="a - b", new_string="a + b"),
            {
                "tool_calls": [
                    # the parent's secret, reached by climbing out of the worktree
                    {"name": "read_file", "arguments": {"path": "../../../secret.txt"}},
                    # the worktree's own settings and git pointer stay protected
                    {"name": "write_file", "arguments": {"path": ".seepient/settings.json", "content": "{}"}},
                    {"name": "write_file", "arguments": {"path": ".git", "content": "gitdir: /tmp"}},
                    # a write outside the known-safe set still asks the parent's approver
                    {"name": "shell", "arguments": {"command": "touch from-child.txt"}},
                ]
            },
            {"text": "fixed in the worktree"},
            {"text": "done"},
        ],
        approver=approver,
        mode="ask-untrusted",
    )
    outcome = await session.run("fix it in a worktree")
    await session.aclose()
    checkout = harness.workspace / ".seepient/worktrees/fix"
    assert outcome.text == "done"
    assert "a + b" in (checkout / "calc.py").read_text()
    assert "a - b" in (harness.workspace / "calc.py").read_text()
    statuses = [(r.tool, r.status) for r in harness.results() if r.tool not in ("agent", "worktree_create")]
    assert statuses == [
        ("edit_file", "ok"),
        ("read_file", "denied"),
        ("write_file", "denied"),
        ("write_file", "denied"),
        ("shell", "rejected"),
    ]
    assert not (checkout / "from-child.txt").exists()
    child = [r for r in harness.audit() if r.get("parent_session_id") == session.id]
    assert child and all(r["session_id"] != session.id for r in child)
    assert verify_log(harness.home / "audit.log").ok


async def test_worktree_settings_are_not_loaded_for_the_child(harness: Harness) -> None:
    harness.git_repo()
    approver = ScriptedApprover(APPROVE, REJECT)
    session = harness.open(
        [
            _call("worktree_create", name="w"),
            {"text": "created"},
        ],
        mode="autonomous-trusted",
    )
    await session.run("make a worktree")
    await session.aclose()
    checkout = harness.workspace / ".seepient/worktrees/w"
    (checkout / ".seepient").mkdir(exist_ok=True)
    (checkout / ".seepient/settings.json").write_text(
        json.dumps({"permissions": {"mode": "autonomous-trusted", "allow": ["Shell", "Edit", "Write"]}})
    )
    parent = harness.open(
        [
            _agent(task="touch", worktree="w", tools=["shell"]),
            _call("shell", command="touch planted.txt"),
            {"text": "refused"},
            {"text": "done"},
        ],
        approver=approver,
        mode="ask-untrusted",
    )
    await parent.run("go")
    await parent.aclose()
    assert [r.action.tool for r in approver.asked] == ["agent", "shell"]
    assert approver.asked[1].verdict.rule == "mode:ask-untrusted"
    assert not (checkout / "planted.txt").exists()


async def test_a_worktree_that_does_not_exist_is_refused(harness: Harness) -> None:
    harness.git_repo()
    (harness.workspace / ".seepient/worktrees/fake").mkdir(parents=True)
    session = harness.open(
        [_agent(task="t", worktree="fake"), _agent(task="t", worktree="../.."), {"text": "done"}],
        mode="autonomous-trusted",
    )
    await session.run("go")
    await session.aclose()
    first, second = harness.results("agent")
    assert first.status == "error" and "not a worktree" in first.output
    assert second.status == "error" and "not allowed" in second.output


async def test_spawning_asks_and_a_headless_run_refuses(harness: Harness) -> None:
    session = harness.open([_agent(task="t"), {"text": "no one to ask"}], mode="always-ask")
    await session.run("go")
    await session.aclose()
    (result,) = harness.results("agent")
    assert result.status == "rejected" and "no one can answer" in result.output
    assert not any(isinstance(e, SubagentEvent) for e in harness.events)


# -- concurrency: a model at the seam that answers by who is asking, so children may interleave freely ------


class SlowProbe(ProbeTool):
    """A read-only tool that waits a little, so children overlap while they call it."""

    name: ClassVar[str] = "slow_probe"

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.peak = 0

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        await asyncio.sleep(0.05)
        self.inside -= 1
        return ToolOutput(text="probed")


class RoleModel:
    """The parent asks for four sub-agents in one step; each child probes once, then answers."""

    name = "scripted:roles"

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        await asyncio.sleep(0)
        history = [m for m in request.messages if m.role != "system"]
        prompt = history[0].content
        if prompt == "parent":
            if len(history) == 1:
                calls = tuple(
                    ToolCall(
                        id=f"call_agent_{i}",
                        name="agent",
                        arguments={"task": f"child {i}", "tools": ["slow_probe"]},
                    )
                    for i in range(4)
                )
                yield Completion(message=Message.assistant("", tool_calls=calls), finish_reason="tool_calls")
                return
            yield Completion(message=Message.assistant("all children done"), finish_reason="stop")
            return
        if len(history) == 1:
            call = ToolCall(id=f"call_probe_{prompt[-1]}", name="slow_probe", arguments={"label": prompt})
            yield Completion(message=Message.assistant("", tool_calls=(call,)), finish_reason="tool_calls")
            return
        yield Completion(message=Message.assistant(f"{prompt} answered"), finish_reason="stop")


async def test_concurrency_limit_bounds_children_at_once(harness: Harness) -> None:
    harness.settings({"subagents": {"maxConcurrent": 2}})
    probe = SlowProbe()
    model = RoleModel()
    router = ModelRouter(ModelSettings(), model_override="replay:unused", model_factory=lambda spec: model)
    session = Session.open(
        SessionOptions(
            workspace=harness.workspace,
            paths=SeepientPaths(home=harness.home),
            model="replay:unused",
            router=router,
            mode="autonomous-trusted",
            extra_tools=[probe],
        )
    )
    session.subscribe(harness.events.append)
    outcome = await session.run("parent")
    await session.aclose()
    assert outcome.text == "all children done"
    results = harness.results("agent")
    assert [r.status for r in results] == ["ok"] * 4
    assert sorted(r.output.split("Answer:\n")[1].split("\n")[0] for r in results) == [
        f"child {i} answered" for i in range(4)
    ]
    # Children did overlap, and never more than the limit at once.
    assert probe.peak == 2


async def test_a_child_cannot_call_a_tool_it_was_not_given(harness: Harness) -> None:
    session = harness.open(
        [
            _agent(task="only look", tools=["read_file"]),
            _call("write_file", path="planted.txt", content="x"),
            {"text": "could not write"},
            {"text": "done"},
        ],
        mode="autonomous-trusted",
    )
    await session.run("go")
    await session.aclose()
    (write,) = harness.results("write_file")
    assert write.status == "error" and "Unknown tool 'write_file'" in write.output
    assert "Available tools: read_file." in write.output
    assert not (harness.workspace / "planted.txt").exists()


async def test_a_child_uses_the_parents_running_mcp_server_and_starts_none(harness: Harness) -> None:
    harness.home.mkdir(exist_ok=True)
    time_server = {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}
    (harness.home / "settings.json").write_text(json.dumps({"mcpServers": {"time": time_server}}))
    session = harness.open(
        [
            _agent(task="what time is it in UTC?", tools=["mcp__time__get_current_time"]),
            _call("mcp__time__get_current_time", timezone="UTC"),
            {"text": "it is now"},
            {"text": "done"},
        ],
        mode="autonomous-trusted",
    )
    try:
        await session.run("go")
    finally:
        await session.aclose()
    (call,) = harness.results("mcp__time__get_current_time")
    assert call.status == "ok" and json.loads(call.output)["timezone"] == "UTC"
    records = harness.audit()
    starts = [r for r in records if r.get("action", {}).get("payload", {}).get("type") == "mcp_server_start"]
    assert [r["session_id"] for r in starts] == [session.id], "only the parent started the server"
    child_calls = [r for r in records if r.get("action", {}).get("payload", {}).get("type") == "mcp"]
    assert [r["parent_session_id"] for r in child_calls] == [session.id]


# -- what a child inherits from its parent's lineage, after the parent opened ---------------------------------


async def test_a_mode_made_stricter_on_the_open_parent_binds_the_children_it_starts_later(
    harness: Harness,
) -> None:
    approver = ScriptedApprover(APPROVE, REJECT)
    session = harness.open(
        [
            _agent(task="t", mode="auto"),  # the mode the parent opened with: now looser than its own
            _agent(task="write", tools=["write_file"]),  # no mode asked: the parent's current one
            _call("write_file", path="new.txt", content="x"),  # always-ask asks even for a new file
            {"text": "child refused"},
            {"text": "done"},
        ],
        approver=approver,
        mode="auto",
    )
    assert session.set_mode("always-ask") == "always-ask"
    await session.run("go")
    await session.aclose()
    loose, ok = harness.results("agent")
    assert loose.status == "error" and "looser than this session's always-ask" in loose.output
    assert ok.status == "ok" and "write_file [rejected]" in ok.output
    assert not (harness.workspace / "new.txt").exists()
    spawn, write = approver.asked
    assert "(always-ask;" in spawn.action.summary
    assert write.action.tool == "write_file" and write.verdict.rule == "mode:always-ask"


async def test_a_hook_added_to_the_open_parent_binds_its_children_and_grandchildren(
    harness: Harness,
) -> None:
    blocked: list[str] = []

    def no_writes(event: dict[str, Any]) -> dict[str, Any]:
        blocked.append(event["session_id"])
        return {"decision": "block", "reason": "no writes in this session tree"}

    session = harness.open(
        [
            _agent(task="delegate", tools=["agent", "write_file"]),
            _agent(task="write", tools=["write_file"]),  # the child delegates further
            _call("write_file", path="by-grandchild.txt", content="x"),
            {"text": "grandchild blocked"},
            _call("write_file", path="by-child.txt", content="x"),
            {"text": "child blocked"},
            {"text": "done"},
        ],
        mode="autonomous-trusted",
    )
    session.hooks.add("preToolUse", no_writes, matcher="^write_file$")
    await session.run("go")
    await session.aclose()
    assert [r.status for r in harness.results("write_file")] == ["denied", "denied"]
    assert not (harness.workspace / "by-child.txt").exists()
    assert not (harness.workspace / "by-grandchild.txt").exists()
    grandchild_id = harness.results("agent")[0].data["agent_id"]
    child_id = harness.results("agent")[1].data["agent_id"]
    assert blocked == [grandchild_id, child_id]


async def test_always_for_this_project_from_a_child_is_taken_as_once_and_saves_no_rule(
    harness: Harness,
) -> None:
    project = (ApprovalDecision.APPROVE_PROJECT, None)
    approver = ScriptedApprover(APPROVE, project, project)
    session = harness.open(
        [
            _agent(task="touch twice", tools=["shell"]),
            _call("shell", command="touch a.txt"),
            _call("shell", command="touch a.txt"),  # asked again: nothing was granted
            {"text": "touched"},
            {"text": "done"},
        ],
        approver=approver,
        mode="ask-untrusted",
    )
    await session.run("go")
    await session.aclose()
    child_asks = approver.asked[1:]
    assert [r.action.tool for r in child_asks] == ["shell", "shell"]
    assert all(r.project_rule is None for r in child_asks)
    assert [r.status for r in harness.results("shell")] == ["ok", "ok"]
    rules = SeepientPaths(home=harness.home).workspace_rules(harness.workspace)
    assert not rules.exists()
    child = [r for r in harness.audit() if r.get("parent_session_id") == session.id]
    assert [r["approval"]["decision"] for r in child] == ["approve_once", "approve_once"]


async def test_a_grandchilds_question_reaches_the_person_labelled_with_the_grandchild(
    harness: Harness,
) -> None:
    approver = ScriptedApprover(APPROVE, APPROVE, REJECT)
    session = harness.open(
        [
            _agent(task="delegate", tools=["agent", "shell"]),
            _agent(task="touch", tools=["shell"]),  # asks the person, labelled with the child
            _call("shell", command="touch deep.txt"),  # asks the person, labelled with the grandchild
            {"text": "grandchild refused"},
            {"text": "child done"},
            {"text": "done"},
        ],
        approver=approver,
        mode="ask-untrusted",
    )
    # A wrapper around a wrapper would wait for the tree's one lock it already holds: bound the wait.
    outcome = await asyncio.wait_for(session.run("go"), timeout=60)
    await session.aclose()
    assert outcome.text == "done"
    grandchild_id = harness.results("agent")[0].data["agent_id"]
    child_id = harness.results("agent")[1].data["agent_id"]
    parent_ask, child_ask, grandchild_ask = approver.asked
    assert parent_ask.agent is None
    assert child_ask.agent is not None and child_ask.agent.startswith(f"sub-agent {child_id} (depth 1)")
    assert grandchild_ask.agent is not None
    assert grandchild_ask.agent.startswith(f"sub-agent {grandchild_id} (depth 2) of {child_id}")
    assert not (harness.workspace / "deep.txt").exists()


def test_a_childs_options_take_the_surfaces_choices_from_the_parent_and_none_of_its_state(
    tmp_path: Path,
) -> None:
    approver = ScriptedApprover()
    parent = SessionOptions(
        workspace=tmp_path,
        model="replay:script.yaml",
        base_url="http://127.0.0.1:1",
        auto_approve=True,
        approver=approver,
        surface="tui",
        max_steps=7,
        environ={"HOME": str(tmp_path)},
        principal="local:me",
        config_file=tmp_path / "extra.json",
        skills=["review"],
        history=[Message(role="user", content="earlier")],
        grants=[("shell", "make")],
        event_history=10,
        resumed=True,
    )
    child = parent.for_child(tmp_path / "task", mode="plan", session_id="ses_child")
    assert child == SessionOptions(
        workspace=tmp_path / "task",
        model="replay:script.yaml",
        base_url="http://127.0.0.1:1",
        auto_approve=True,
        approver=approver,
        surface="tui",
        max_steps=7,
        environ={"HOME": str(tmp_path)},
        principal="local:me",
        mode="plan",
        session_id="ses_child",
    )
