"""Context inside a real session (replay model, real policy, executor and audit log): the skill tool through
the pipeline, --skill, and compaction before model calls, with every request checked on its way out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.context.history import is_summary, pairing_problems
from seepient.context.skills import UnknownSkillError
from seepient.models.scripted import ReplayModel
from seepient.protocol import CompactionEvent, ModelRequest, ModelStreamEvent, RuntimeEvent, ToolResult
from seepient.runtime import Session, SessionOptions
from tests.approved import approve
from tests.audit_view import merge_actions
from tests.context.conftest import write_skill_file
from tests.support.scripts import write_script


class RecordingModel:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        self.requests.append(request)
        async for event in self.inner.stream(request):
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()


def _open(
    tmp_path: Path, workspace: Path, home: Path, turns: list[dict[str, Any]], **options: Any
) -> tuple[Session, list[RuntimeEvent]]:
    script = write_script(tmp_path / "script.yaml", turns)
    session = Session.open(
        SessionOptions(
            workspace=workspace, model=f"replay:{script}", paths=SeepientPaths(home=home), **options
        )
    )
    events: list[RuntimeEvent] = []
    session.subscribe(events.append)
    return session, events


def _audit(home: Path) -> list[dict[str, Any]]:
    log = home / "audit.log"
    return merge_actions([json.loads(line) for line in log.read_text().splitlines()] if log.exists() else [])


async def test_the_skill_tool_loads_instructions_through_policy_and_audit(tmp_path, workspace, seepient_home):
    skill_md = write_skill_file(
        workspace / ".agents" / "skills",
        "pdf-forms",
        description="Fill PDF forms.",
        body="1. Run scripts/fill.py with the form.\n",
    )
    (skill_md.parent / "scripts").mkdir()
    (skill_md.parent / "scripts" / "fill.py").write_text("print('filling')\n")
    session, events = _open(
        tmp_path,
        workspace,
        seepient_home,
        [
            {"tool_calls": [{"name": "skill", "arguments": {"name": "pdf-forms"}}]},
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": ".agents/skills/pdf-forms/scripts/fill.py"}}
                ]
            },
            {"tool_calls": [{"name": "skill", "arguments": {"name": "pdf-form"}}]},
            {"text": "done"},
        ],
    )
    assert "- pdf-forms: Fill PDF forms." in session.context.system_prompt()
    outcome = await session.run("rename a variable")  # no match: the model loads the skill itself
    assert outcome.reason == "final"
    loaded, bundled, unknown = [e for e in events if isinstance(e, ToolResult)]
    assert (loaded.tool, loaded.status) == ("skill", "ok")
    assert "Run scripts/fill.py" in loaded.output and str(skill_md.parent) in loaded.output
    assert (bundled.status, "print('filling')" in bundled.output) == ("ok", True)
    assert unknown.status == "error" and "Available skills: pdf-forms" in unknown.output
    record = _audit(seepient_home)[0]
    assert record["action"]["tool"] == "skill" and record["action"]["kind"] == "read"
    assert record["action"]["payload"]["paths"] == [str(skill_md)]
    assert record["action"]["digest"] == loaded.digest
    await session.aclose()


async def test_a_user_skill_loads_through_the_skill_tool(tmp_path, workspace, seepient_home):
    write_skill_file(seepient_home / "skills", "mine", description="My own skill.", body="MY STEPS\n")
    session, events = _open(
        tmp_path,
        workspace,
        seepient_home,
        [{"tool_calls": [{"name": "skill", "arguments": {"name": "mine"}}]}, {"text": "ok"}],
    )
    await session.run("go")
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.status == "ok" and "MY STEPS" in result.output


async def test_user_skills_named_with_skill_reach_the_prompt(tmp_path, workspace, seepient_home):
    write_skill_file(seepient_home / "skills", "mine", description="My own skill.", body="MY STEPS\n")
    session, _ = _open(tmp_path, workspace, seepient_home, [{"text": "ok"}], skills=["mine"])
    model = RecordingModel(session._loop._model)
    session._loop._model = model
    await session.run("go")
    system = model.requests[0].messages[0]
    assert (
        system.role == "system" and "# Active skill: mine" in system.content and "MY STEPS" in system.content
    )


def test_an_unknown_skill_name_fails_before_any_turn(tmp_path, workspace, seepient_home):
    write_skill_file(workspace / ".agents" / "skills", "pdf-forms")
    with pytest.raises(UnknownSkillError, match="no skill named 'nope'.*pdf-forms"):
        _open(tmp_path, workspace, seepient_home, [{"text": "ok"}], skills=["nope"])


async def test_a_long_session_is_compacted_and_every_request_stays_valid(tmp_path, workspace, seepient_home):
    (workspace / ".seepient").mkdir()
    (workspace / ".seepient" / "settings.json").write_text(
        json.dumps({"context": {"windowTokens": 12_000, "compactAt": 0.8}})
    )
    (workspace / "big.txt").write_text("".join(f"line {n:03d} " + "x" * 50 + "\n" for n in range(100)))
    turns: list[dict[str, Any]] = []
    for number in range(5):
        turns.append({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]})
        turns.append({"text": f"answer {number}: " + "a" * 3_000})
    session, events = _open(tmp_path, workspace, seepient_home, turns)
    main = RecordingModel(session._loop._model)
    session._loop._model = main
    summary_script = tmp_path / "summary.json"
    summary_script.write_text(json.dumps([{"text": "SUMMARY: read big.txt several times"}] * 5))
    summariser = RecordingModel(ReplayModel(summary_script))
    session.context.set_summary_model(summariser, "efficient-model")

    prompts = [f"request {n}: look at big.txt" for n in range(5)]
    for prompt in prompts:
        outcome = await session.run(prompt)
        assert outcome.reason == "final", outcome

    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    summarised = [e for e in compactions if e.summarised_messages]
    assert summarised, compactions
    first = summarised[0]
    assert first.summary_model == "efficient-model" and first.summary_error is None
    assert first.tokens_before > 12_000 * 0.8 > first.tokens_after
    assert first.window_tokens == 12_000 and first.turn_id
    assert len(summariser.requests) == len(summarised)
    assert "request 0: look at big.txt" in summariser.requests[0].messages[1].content
    # Every request that went to the model: system prompt first, pairing valid, the turn's request present.
    for request in main.requests:
        messages = request.messages
        assert messages[0].role == "system" and not any(m.role == "system" for m in messages[1:])
        assert pairing_problems(messages[1:], allow_pending_tail=False) == []
        latest_user = [m for m in messages if m.role == "user" and not is_summary(m)][-1]
        assert latest_user.content in prompts
        assert session.context.estimate(messages[0].content, messages[1:], request.tools) <= 12_000
    history = session._loop._history
    assert is_summary(history[0]) or any(is_summary(m) for m in history)
    assert history[-1].content.startswith("answer 4")
    await session.aclose()


async def test_the_skill_tool_on_its_own_discovers_and_rechecks_the_file(workspace, seepient_home):
    from seepient.execution.local import LocalExecutor
    from seepient.policy.paths import PathGuard
    from seepient.tools.base import ToolContext, ToolInputError
    from seepient.tools.builtin.skill import SkillInput, SkillTool

    skill_md = write_skill_file(workspace / ".agents" / "skills", "pdf-forms", body="STEPS\n")
    executor = LocalExecutor(workspace, seepient_home=seepient_home)
    ctx = ToolContext(
        workspace=workspace,
        session_id="ses",
        call_id="call",
        paths=PathGuard(workspace, seepient_home=seepient_home),
        executor=executor,
        reads=executor.reads,
    )
    tool = SkillTool(seepient_home=seepient_home)  # not bound to a session: discovers by itself
    with pytest.raises(ToolInputError, match="No skill named 'nope'. Available skills: pdf-forms"):
        await tool.prepare(SkillInput(name="nope"), ctx)
    draft = await tool.prepare(SkillInput(name="pdf-forms"), ctx)
    assert draft.read_only and draft.payload.paths == (str(skill_md),)  # type: ignore[union-attr]
    assert draft.summary == "Load skill pdf-forms (.agents/skills/pdf-forms/SKILL.md)"
    output = await tool.execute(approve(draft), ctx)
    assert not output.is_error and output.text.endswith("STEPS")
    # What is on disk at execution is what the model gets, checked again.
    skill_md.write_text("front matter gone\n")
    broken = await tool.execute(approve(draft), ctx)
    assert broken.is_error and "has no YAML front matter" in broken.text
