"""The replay model: plays DESIGN §8 scripts turn by turn and refuses broken scripts at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from seepient.models.base import ModelError
from seepient.models.scripted import ReplayModel, ReplayScriptError
from seepient.protocol import Completion, Message, ModelRequest, ModelStreamEvent, TextChunk, ToolCallChunk

REQUEST = ModelRequest(model="replay", messages=(Message.user("fix calc.py"),))

DESIGN_EXAMPLE = """\
- text: "Let me look at the code."
  tool_calls:
    - name: read_file
      arguments: {path: calc.py}
- tool_calls:
    - name: edit_file
      arguments: {path: calc.py, old_string: "return a - b", new_string: "return a + b"}
- text: "Fixed."
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


async def play(model: ReplayModel) -> list[ModelStreamEvent]:
    return [event async for event in model.stream(REQUEST)]


def completion_of(events: list[ModelStreamEvent]) -> Completion:
    assert [type(event) for event in events].count(Completion) == 1
    assert isinstance(events[-1], Completion)
    return events[-1]


async def test_plays_the_design_example_turn_by_turn(tmp_path):
    model = ReplayModel(write(tmp_path, "script.yaml", DESIGN_EXAMPLE))
    assert model.name == f"replay:{tmp_path / 'script.yaml'}"

    first = await play(model)
    done = completion_of(first)
    assert done.finish_reason == "tool_calls"
    assert done.message.content == "Let me look at the code."
    (call,) = done.message.tool_calls
    assert (call.name, call.arguments, call.arguments_error) == ("read_file", {"path": "calc.py"}, None)
    texts = [event.text for event in first if isinstance(event, TextChunk)]
    assert texts == ["Let ", "me ", "look ", "at ", "the ", "code."]
    chunks = [event for event in first if isinstance(event, ToolCallChunk)]
    assert (chunks[0].index, chunks[0].id, chunks[0].name) == (0, call.id, "read_file")
    assert json.loads("".join(chunk.arguments_delta for chunk in chunks)) == {"path": "calc.py"}
    assert first.index(chunks[0]) > first.index(next(e for e in first if isinstance(e, TextChunk)))

    second = completion_of(await play(model))
    assert second.message.content == ""
    assert second.message.tool_calls[0].arguments == {
        "path": "calc.py",
        "old_string": "return a - b",
        "new_string": "return a + b",
    }

    third = completion_of(await play(model))
    assert (third.message.content, third.message.tool_calls, third.finish_reason) == ("Fixed.", (), "stop")
    assert model.steps_played == 3 == model.turn_count


async def test_running_past_the_end_names_the_step_and_the_script(tmp_path):
    path = write(tmp_path, "short.yaml", "- text: only one\n")
    model = ReplayModel(path)
    await play(model)
    with pytest.raises(ModelError) as caught:
        await play(model)
    assert "step 2" in str(caught.value) and str(path) in str(caught.value)
    assert not caught.value.retryable
    with pytest.raises(ModelError, match="step 2"):
        await play(model)


async def test_json_and_yaml_scripts_play_the_same(tmp_path):
    turns = yaml.safe_load(DESIGN_EXAMPLE)
    from_yaml = ReplayModel(write(tmp_path, "s.yml", DESIGN_EXAMPLE))
    from_json = ReplayModel(write(tmp_path, "s.json", json.dumps(turns)))
    for _ in turns:
        assert await play(from_yaml) == [
            event.model_copy(update={"model": from_yaml.name}) if isinstance(event, Completion) else event
            for event in await play(from_json)
        ]


async def test_generated_ids_are_unique_and_the_same_on_every_run(tmp_path):
    script = write(
        tmp_path,
        "ids.yaml",
        """\
- tool_calls:
    - {name: read_file, arguments: {path: a}}
    - {name: read_file, arguments: {path: b}, id: mine}
    - {name: read_file, arguments: {path: c}}
- tool_calls:
    - {name: read_file, arguments: {path: d}}
""",
    )

    async def ids(model: ReplayModel) -> list[str]:
        found = []
        for _ in range(2):
            found += [call.id for call in completion_of(await play(model)).message.tool_calls]
        return found

    first_run = await ids(ReplayModel(script))
    assert first_run[1] == "mine"
    assert len(set(first_run)) == 4
    assert await ids(ReplayModel(script)) == first_run


async def test_text_chunks_rebuild_the_text_exactly(tmp_path):
    text = "  Leading spaces,\ttabs and\nnew lines\n\n  kept.  "
    model = ReplayModel(write(tmp_path, "t.json", json.dumps([{"text": text}])))
    events = await play(model)
    pieces = [event.text for event in events if isinstance(event, TextChunk)]
    assert len(pieces) > 5
    assert "".join(pieces) == text
    assert completion_of(events).message.content == text


async def test_a_tool_call_without_arguments_has_empty_arguments(tmp_path):
    model = ReplayModel(write(tmp_path, "n.yaml", "- tool_calls: [{name: list_sessions}]\n"))
    (call,) = completion_of(await play(model)).message.tool_calls
    assert (call.arguments, call.raw_arguments) == ({}, "{}")


async def test_the_replay_model_satisfies_the_model_protocol_surface(tmp_path):
    model = ReplayModel(write(tmp_path, "p.yaml", "- text: hi\n"))
    await model.aclose()
    assert completion_of(await play(model)).model == model.name


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("map.yaml", "text: hello\n", "must be a list of assistant turns"),
        ("empty.yaml", "", "is empty"),
        ("none.json", "[]", "has no turns"),
        ("scalar.yaml", "- hello\n", "turn 1 must be a mapping"),
        (
            "unknown.yaml",
            "- text: a\n- txt: b\n",
            "turn 2: unknown key 'txt' (allowed: text, tool_calls, tokens_per_second, thinking)",
        ),
        (
            "unknown_call.yaml",
            "- tool_calls: [{name: a, args: {}}]\n",
            "turn 1: unknown key 'tool_calls[0].args' (allowed: name, arguments, id)",
        ),
        (
            "args_list.yaml",
            "- text: ok\n- tool_calls: [{name: read_file, arguments: [calc.py]}]\n",
            "turn 2: tool_calls[0].arguments must be an object (argument names to values), not a list",
        ),
        (
            "args_string.json",
            '[{"tool_calls": [{"name": "read_file", "arguments": "{\\"path\\": \\"a\\"}"}]}]',
            "turn 1: tool_calls[0].arguments must be an object",
        ),
        ("no_name.yaml", "- tool_calls: [{arguments: {}}]\n", "turn 1: tool_calls[0].name is required"),
        ("calls_map.yaml", "- tool_calls: {name: a}\n", "turn 1: tool_calls"),
        ("bool_text.yaml", "- text: yes\n", "turn 1: text must be a string, not a boolean; quote it"),
        ("empty_turn.yaml", "- text: a\n- {}\n", "turn 2 is empty"),
        ("date.yaml", "- tool_calls: [{name: a, arguments: {when: 2024-01-01}}]\n", "quote it"),
        (
            "dup.yaml",
            "- tool_calls: [{name: a, id: x}]\n- tool_calls: [{name: b, id: x}]\n",
            "turn 2: tool call id 'x' is already used in turn 1",
        ),
        ("bad.yaml", "- text: [unclosed\n", "invalid YAML"),
        ("bad.json", '[{"text": "a"},]', "bad.json:1:16: invalid JSON"),
    ],
)
def test_broken_scripts_fail_at_load_naming_file_and_turn(tmp_path, name, text, expected):
    path = write(tmp_path, name, text)
    with pytest.raises(ReplayScriptError) as caught:
        ReplayModel(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)
    assert isinstance(caught.value, ModelError) and not caught.value.retryable


def test_a_missing_script_is_a_clear_error(tmp_path):
    with pytest.raises(ReplayScriptError, match="does not exist"):
        ReplayModel(tmp_path / "nope.yaml")


def test_yaml_errors_point_at_the_line(tmp_path):
    path = write(tmp_path, "lines.yaml", "- text: fine\n- text: ok\n  tool_calls: [\n")
    with pytest.raises(ReplayScriptError, match=r"lines\.yaml:\d+:\d+: invalid YAML"):
        ReplayModel(path)
