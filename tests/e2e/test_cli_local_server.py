"""End to end: ``seepient run`` against a local llama-cpp-python server, played by the fake provider from the
recorded exchanges (with that server's request validation): a multi-step tool turn completes, usage it never
sent is unknown, a server that ignores the tools gives a text answer, and a looping model stops at the turn
budget with exit code 3."""

from __future__ import annotations

import json

from tests.e2e.conftest import json_events
from tests.support.sse_server import LLAMA_CPP_PYTHON, Reply, SSEReplayServer, llama_cpp_python_check

PING_CALL = f"{LLAMA_CPP_PYTHON}/stream_with_ping_comments.txt"
TEXT = f"{LLAMA_CPP_PYTHON}/text_stream.sse"


def _run(seepient, server: SSEReplayServer, *extra: str):
    return seepient(
        "run", "List the files in this folder using the shell tool.", "--model", "openai:smollm",
        "--base-url", server.base_url, *extra,
    )  # fmt: skip


def test_a_multi_step_tool_turn_completes_and_unreported_usage_is_unknown(world, seepient):
    with SSEReplayServer(check=llama_cpp_python_check) as server:
        server.queue(Reply.recorded(PING_CALL), Reply.transcript(TEXT))
        proc = _run(seepient, server, "--json")
        requests = [request.json() for request in server.requests]
    assert proc.returncode == 0, proc.stderr
    done = json_events(proc.stdout)[-1]
    assert done["type"] == "turn_completed" and done["reason"] == "final"
    assert done["text"] == "Hey there, hello."
    assert done["usage"]["input_tokens"] is None and done["usage"]["output_tokens"] is None
    assert len(requests) == 2 and all(r["max_tokens"] == 8192 for r in requests)
    assistant = requests[1]["messages"][-2]
    assert assistant["role"] == "assistant" and assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{ "command": "shell'


def test_ignored_tools_end_the_turn_with_the_text_answer_and_usage_shows_as_unknown(world, seepient):
    with SSEReplayServer(check=llama_cpp_python_check) as server:
        server.queue(Reply.transcript(TEXT))
        proc = _run(seepient, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hey there, hello."
    assert "tokens unknown in / unknown out" in proc.stderr


def test_a_looping_model_stops_at_the_turn_budget_with_exit_code_3(world, seepient):
    world.seepient_home.mkdir(exist_ok=True)
    (world.seepient_home / "settings.json").write_text(json.dumps({"runtime": {"turnTokenBudget": 20_000}}))
    with SSEReplayServer(check=llama_cpp_python_check) as server:
        server.cycle(Reply.recorded(PING_CALL))
        proc = _run(seepient, server)
    assert proc.returncode == 3, proc.stderr
    assert "turn stopped: the turn used about" in proc.stderr and "runtime.turnTokenBudget" in proc.stderr
    assert "turn ended: budget" in proc.stderr


def test_an_empty_stream_is_a_clear_model_error(world, seepient):
    with SSEReplayServer(check=llama_cpp_python_check) as server:
        server.queue(Reply.transcript(f"{LLAMA_CPP_PYTHON}/tools_stream_no_tool_choice.sse"))
        proc = _run(seepient, server)
        asked = len(server.requests)
    assert proc.returncode == 1
    assert "answered HTTP 200 and then closed the stream without sending a single event" in proc.stderr
    assert asked == 1
