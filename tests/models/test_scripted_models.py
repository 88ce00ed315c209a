"""Scripted models from Python: ``ScriptedModel(turns=...)`` plays like the replay file it stands for,
``FunctionModel(fn)`` answers from the request, and both run a real session through the router's seam."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.config.settings import Settings
from seepient.models.base import ModelError
from seepient.models.resolve import is_script_spec, resolve_model
from seepient.models.router import ModelRouter
from seepient.models.scripted import (
    FunctionModel,
    ReplayModel,
    ReplayScriptError,
    ScriptedModel,
    ScriptError,
)
from seepient.protocol import Completion, Message, ModelRequest, ModelStreamEvent, TextChunk, ToolCallChunk
from seepient.runtime import Session, SessionOptions
from tests.support.scripts import write_script

REQUEST = ModelRequest(model="scripted", messages=(Message.user("fix calc.py"),))
DESIGN_TURNS: list[dict[str, Any]] = [
    {
        "text": "Let me look at the code.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}],
    },
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            }
        ]
    },
    {"text": "Fixed."},
]


async def play(model: Any, request: ModelRequest = REQUEST) -> list[ModelStreamEvent]:
    return [event async for event in model.stream(request)]


def completion_of(events: list[ModelStreamEvent]) -> Completion:
    assert [type(event) for event in events].count(Completion) == 1 and isinstance(events[-1], Completion)
    return events[-1]


def _settings(data: dict[str, Any]) -> Any:
    return Settings.model_validate({"models": data}).models


# --- ScriptedModel ------------------------------------------------------------------------------------------


async def test_python_turns_stream_exactly_as_the_same_replay_file(tmp_path: Path) -> None:
    scripted = ScriptedModel(DESIGN_TURNS, name="replay-twin")
    replayed = ReplayModel(write_script(tmp_path / "script.yaml", DESIGN_TURNS))
    for _ in DESIGN_TURNS:
        ours = await play(scripted)
        theirs = await play(replayed)
        assert ours[:-1] == theirs[:-1]
        assert completion_of(ours).message == completion_of(theirs).message
        assert completion_of(ours).model == "replay-twin"
    assert scripted.steps_played == scripted.turn_count == 3
    (call,) = completion_of(await play(ScriptedModel(DESIGN_TURNS))).message.tool_calls
    assert call.id == "call_r1_1" and call.raw_arguments == '{"path": "calc.py"}'


async def test_the_requests_it_was_sent_are_kept_in_order(tmp_path: Path) -> None:
    model = ScriptedModel([{"text": "one"}, {"text": "two"}])
    second = ModelRequest(model="scripted", messages=(Message.user("again"),))
    await play(model)
    await play(model, second)
    assert model.requests == [REQUEST, second]
    # A replay file plays real runs: it keeps none.
    replayed = ReplayModel(write_script(tmp_path / "s.yaml", [{"text": "one"}]))
    await play(replayed)
    assert replayed.requests == []


async def test_running_past_the_last_turn_names_the_step_and_the_model() -> None:
    model = ScriptedModel([{"text": "only"}], name="short")
    await play(model)
    with pytest.raises(ScriptError) as caught:
        await play(model)
    message = str(caught.value)
    assert "scripted model 'short' has no turn for step 2" in message and "1 turn(s)" in message
    assert not caught.value.retryable and not isinstance(caught.value, ReplayScriptError)


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([], "scripted model 'bad' has no turns"),
        (
            [{"text": "a"}, "b"],
            "scripted model 'bad': turn 2 must be a mapping with text and/or tool_calls, not a string",
        ),
        (
            [{"txt": "a"}],
            "turn 1: unknown key 'txt' (allowed: text, tool_calls, tokens_per_second, thinking)",
        ),
        ([{"text": 3}], "turn 1: text must be a string, not a number; quote it"),
        (
            [{"tool_calls": [{"name": "read_file", "arguments": ["a"]}]}],
            "tool_calls[0].arguments must be an object",
        ),
        (
            [{"tool_calls": [{"name": "x", "arguments": {"at": Path("/etc")}}]}],
            "holds a value that is not JSON",
        ),
        (
            [{"tool_calls": [{"name": "x", "arguments": {"n": float("nan")}}]}],
            "holds a value that is not JSON",
        ),
        (
            [{"tool_calls": [{"name": "a", "id": "x"}]}, {"tool_calls": [{"name": "b", "id": "x"}]}],
            "already used in turn 1",
        ),
        ([{"text": ""}], "turn 1 is empty"),
        ([{"text": "a", "tokens_per_second": 0}], "turn 1: tokens_per_second"),
    ],
)
def test_broken_python_turns_fail_when_the_model_is_made(turns: list[Any], expected: str) -> None:
    with pytest.raises(ScriptError) as caught:
        ScriptedModel(turns, name="bad")
    assert expected in str(caught.value)
    assert isinstance(caught.value, ModelError) and not caught.value.retryable


def test_the_turns_are_copied_when_the_model_is_made() -> None:
    turns: list[dict[str, Any]] = [{"text": "kept"}]
    model = ScriptedModel(turns)
    turns.append({"text": "added later"})
    turns[0]["text"] = "changed later"
    assert model.turn_count == 1
    assert model._turns[0].text == "kept"


async def test_resume_after_plays_on_from_the_steps_a_history_shows() -> None:
    model = ScriptedModel([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    model.resume_after(2)
    assert completion_of(await play(model)).message.content == "three"
    model.resume_after(99)
    with pytest.raises(ScriptError, match="step 4"):
        await play(model)


# --- FunctionModel ------------------------------------------------------------------------------------------


async def test_a_function_model_answers_from_the_request_it_got() -> None:
    def echo(request: ModelRequest) -> dict[str, Any]:
        return {"text": f"you said: {request.messages[-1].content}"}

    model = FunctionModel(echo)
    events = await play(model)
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "you said: fix calc.py"
    assert completion_of(events).model == "function" and model.requests == [REQUEST]


async def test_an_async_function_and_its_tool_calls_stream_like_a_provider() -> None:
    async def reader(request: ModelRequest) -> dict[str, Any]:
        mine = {"name": "glob", "id": f"mine-{len(model.requests)}"}
        return {"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}, mine]}

    model = FunctionModel(reader, name="reader")
    first = completion_of(await play(model)).message.tool_calls
    second = await play(model)
    assert [call.id for call in first] == ["call_f1_1", "mine-1"]
    chunks = [event for event in second if isinstance(event, ToolCallChunk)]
    assert chunks[0].id == "call_f2_1" and chunks[0].name == "read_file"


async def test_a_function_model_refuses_an_id_it_already_used_naming_the_step() -> None:
    model = FunctionModel(lambda request: {"tool_calls": [{"name": "glob", "id": "same"}]})
    await play(model)
    with pytest.raises(
        ScriptError, match=r"function model 'function': step 2: tool call id 'same' is already used in step 1"
    ):
        await play(model)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("just text", "step 1 must be a mapping with text and/or tool_calls, not a string"),
        (None, "step 1 must be a mapping with text and/or tool_calls, not null"),
        ({}, "step 1 is empty"),
        ({"tool_calls": [{"arguments": {}}]}, "step 1: tool_calls[0].name is required"),
    ],
)
async def test_a_function_that_gives_no_turn_is_an_error_naming_the_step(answer: Any, expected: str) -> None:
    with pytest.raises(ScriptError) as caught:
        await play(FunctionModel(lambda request: answer))
    assert expected in str(caught.value)


async def test_a_model_error_from_the_function_reaches_the_caller_unchanged() -> None:
    failure = ModelError("provider overloaded", retryable=True, status=529)

    def overloaded(request: ModelRequest) -> dict[str, Any]:
        raise failure

    with pytest.raises(ModelError) as caught:
        await play(FunctionModel(overloaded))
    assert caught.value is failure


# --- the seam: specs, the router and a real session ---------------------------------------------------------


def test_the_replay_scheme_is_a_script_and_providers_are_not(tmp_path: Path) -> None:
    assert is_script_spec("replay:/tmp/x.yaml") and is_script_spec(" replay:x")
    assert not is_script_spec("openai:gpt-4.1") and not is_script_spec("replayed:x")
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    assert isinstance(resolve_model(f"replay:{script}", settings=_settings({})), ReplayModel)
    with pytest.raises(ModelError, match="--base-url does not apply"):
        resolve_model(f"replay:{script}", settings=_settings({}), base_url="http://127.0.0.1:1/v1")


def test_a_model_handed_to_the_router_is_the_whole_conversation() -> None:
    routes = {"text.standard": {"model": "openai:gpt-4.1", "fallbackProviders": ["anthropic:claude-x"]}}
    model = FunctionModel(lambda request: {"text": "ok"}, name="fn-under-test")
    router = ModelRouter(_settings({"routes": routes}), model_override=model, environ={})
    assert [target.spec for target in router.route_for("text", "standard").targets] == ["fn-under-test"]
    assert [target.spec for target in router.route_for("plan", "complex").targets] == ["fn-under-test"]
    assert router.model_for("fn-under-test") is model
    # A summary must not take the conversation's answers...
    assert router.efficient() is None
    # ...but a configured efficient route keeps its own model, as it does beside a replay script.
    efficient = {**routes, "text.efficient": {"model": "ollama:qwen3"}}
    configured = ModelRouter(_settings({"routes": efficient}), model_override=model, environ={})
    routed = configured.efficient()
    assert routed is not None and routed.name == "ollama:qwen3"


def _open(tmp_path: Path, model: Any, **options: Any) -> Session:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return Session.open(
        SessionOptions(
            workspace=workspace,
            model=model,
            paths=SeepientPaths(home=tmp_path / "home"),
            auto_approve=True,
            **options,
        )
    )


async def test_a_session_runs_on_a_scripted_model_through_the_real_pipeline(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "seen\n"}}]},
            {"text": "noted"},
        ]
    )
    session = _open(tmp_path, model)
    try:
        outcome = await session.run("take a note")
    finally:
        await session.aclose()
    assert outcome.text == "noted"
    assert (tmp_path / "ws" / "notes.md").read_text() == "seen\n"
    # The second request carried the tool's result back to the model.
    (result,) = [m for m in model.requests[1].messages if m.role == "tool"]
    assert result.tool_call_id == "call_r1_1" and not result.is_error
    records = [json.loads(line) for line in (tmp_path / "home" / "audit.log").read_text().splitlines()]
    assert any(record.get("action", {}).get("tool") == "write_file" for record in records)


async def test_a_function_model_sees_each_tool_result_and_decides_from_it(tmp_path: Path) -> None:
    def agent(request: ModelRequest) -> dict[str, Any]:
        last = request.messages[-1]
        if last.role == "user":
            return {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]}
        return {"text": "the read failed" if last.is_error else "the read worked"}

    model = FunctionModel(agent)
    session = _open(tmp_path, model)
    try:
        outcome = await session.run("read it")
    finally:
        await session.aclose()
    assert outcome.text == "the read failed" and len(model.requests) == 2


async def test_a_sub_agent_plays_the_python_turns_after_the_parents_agent_call(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"name": "agent", "arguments": {"task": "read calc.py", "tools": ["read_file"]}}
                ]
            },
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
            {"text": "add subtracts"},
            {"text": "the child found it"},
        ]
    )
    session = _open(tmp_path, model, mode="autonomous-trusted")
    try:
        outcome = await session.run("find the bug")
    finally:
        await session.aclose()
    assert outcome.text == "the child found it"
    assert model.steps_played == 4
    # The child's second request holds its own read, not the parent's conversation.
    child_read = model.requests[2]
    assert any(m.role == "tool" and "return a - b" in m.content for m in child_read.messages)
    assert all("find the bug" not in m.content for m in child_read.messages if m.role == "user")


async def test_a_restored_session_on_a_scripted_model_plays_on_after_its_history(tmp_path: Path) -> None:
    model = ScriptedModel([{"text": "first answer"}, {"text": "second answer"}])
    history = [Message.user("earlier"), Message.assistant("first answer")]
    session = _open(tmp_path, model, history=history, resumed=True)
    try:
        outcome = await session.run("and now?")
    finally:
        await session.aclose()
    assert outcome.text == "second answer" and model.steps_played == 2
