"""A turn against a local OpenAI-compatible server cannot run forever and is never fooled by a cut-off answer:
an answer that hit the output limit is reported to the user and the model and the turn goes on; the turn's
token budget (reported or estimated tokens) and wall-time budget end it with reason ``budget``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from seepient.config import SeepientPaths
from seepient.protocol import ErrorEvent, RuntimeEvent
from seepient.runtime import Session, SessionOptions
from seepient.runtime.loop import CUT_OFF_NOTE
from tests.support.sse_server import LLAMA_CPP_PYTHON, Reply, SSEReplayServer, llama_cpp_python_check


@pytest.fixture
async def llama() -> AsyncIterator[SSEReplayServer]:
    with SSEReplayServer(check=llama_cpp_python_check) as server:
        yield server


async def run_turn(
    tmp_path: Path, server: SSEReplayServer, prompt: str = "go", **settings: Any
) -> tuple[Any, list[RuntimeEvent]]:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("alpha\n")
    user = {
        "models": {
            "providers": {"llama": {"type": "openai-chat", "baseUrl": server.base_url}},
            "default": "llama:smollm",
            "retry": {"maxAttempts": 1},
            **settings.pop("models", {}),
        },
        **settings,
    }
    (home / "settings.json").write_text(json.dumps(user))
    session = Session.open(SessionOptions(workspace=workspace, paths=SeepientPaths(home=home)))
    events: list[RuntimeEvent] = []
    session.subscribe(events.append)
    try:
        outcome = await session.run(prompt)
    finally:
        await session.aclose()
    return outcome, events


def errors(events: list[RuntimeEvent]) -> dict[str, str]:
    return {e.code: e.message for e in events if isinstance(e, ErrorEvent)}


READ = {"name": "read_file", "arguments": {"path": "notes.txt"}}


async def test_an_answer_cut_off_at_the_output_limit_is_not_final(tmp_path, llama):
    llama.queue(
        Reply.recorded(f"{LLAMA_CPP_PYTHON}/stream_finish_length.txt"),
        Reply.transcript(f"{LLAMA_CPP_PYTHON}/text_stream.sse"),
    )
    outcome, events = await run_turn(tmp_path, llama, models={"maxOutputTokens": {"llama:smollm": 6}})
    assert outcome.reason == "final" and outcome.text == "Hey there, hello." and outcome.steps == 2
    assert "cut off at its output limit" in errors(events)["output_limit"]
    first, second = (request.json() for request in llama.requests)
    assert first["max_tokens"] == second["max_tokens"] == 6
    assert second["messages"][-2:] == [
        {"role": "assistant", "content": "The sun dips"},
        {"role": "user", "content": CUT_OFF_NOTE},
    ]


async def test_a_cut_off_tool_call_is_reported_to_the_model_not_run(tmp_path, llama):
    cut_call = Reply.synthesized("", [READ]).truncated(keep=3)
    length = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    llama.queue(
        Reply(events=(*cut_call.events, f"data: {length}\n\n".encode())),
        Reply.synthesized("Done."),
    )
    outcome, _ = await run_turn(tmp_path, llama)
    assert outcome.reason == "final" and outcome.text == "Done."
    messages = llama.requests[1].json()["messages"]
    assert messages[-2]["role"] == "tool" and "not valid JSON" in messages[-2]["content"]
    assert messages[-1] == {"role": "user", "content": CUT_OFF_NOTE}


async def test_the_token_budget_ends_a_looping_turn(tmp_path, llama):
    llama.cycle(Reply.synthesized("Again.", [READ], usage=(600, 100)))
    outcome, events = await run_turn(tmp_path, llama, runtime={"turnTokenBudget": 1000})
    assert outcome.reason == "budget" and outcome.steps == 2 and len(llama.requests) == 2
    assert outcome.usage.input_tokens == 1200 and outcome.usage.output_tokens == 200
    assert (
        "about 1,400 tokens, its budget is 1,000 (runtime.turnTokenBudget)" in errors(events)["turn_budget"]
    )


async def test_tokens_a_server_does_not_report_are_estimated_against_the_budget(tmp_path, llama):
    # Every answer is a tool call with broken arguments and no usage: the recorded loop that never ended.
    llama.cycle(Reply.recorded(f"{LLAMA_CPP_PYTHON}/stream_with_ping_comments.txt"))
    outcome, events = await run_turn(tmp_path, llama, runtime={"turnTokenBudget": 20_000})
    assert outcome.reason == "budget" and 1 < outcome.steps < 50
    assert outcome.usage.input_tokens is None
    assert "(runtime.turnTokenBudget)" in errors(events)["turn_budget"]
    # Every call was answered, so the history stays valid for the next turn.
    last = llama.last_request.json()["messages"]
    assert last[-1]["role"] == "tool"


async def test_the_wall_time_budget_ends_a_model_that_never_answers(tmp_path, llama):
    llama.queue(Reply.synthesized("late").delayed(60))
    outcome, events = await run_turn(tmp_path, llama, runtime={"turnTimeoutMs": 1000})
    assert outcome.reason == "budget" and outcome.steps == 1
    assert "wall-time budget of 1 s (runtime.turnTimeoutMs)" in errors(events)["turn_budget"]
