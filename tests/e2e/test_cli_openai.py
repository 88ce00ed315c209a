"""End to end: ``seepient run --model openai:… --base-url`` against a local OpenAI-compatible server that
streams a tool call and then an answer; the tool result must travel back in the second request."""

from __future__ import annotations

from tests.e2e.conftest import SECRET_MARKER, json_events
from tests.support.sse_server import Reply, SSEReplayServer


def test_openai_compatible_endpoint_drives_a_full_turn(world, seepient):
    (world.workspace / "notes.txt").write_text("alpha\nbeta\n")
    with SSEReplayServer() as server:
        server.queue(
            Reply.synthesized(
                "Reading it.", [{"name": "read_file", "arguments": {"path": "notes.txt"}, "id": "call_1"}]
            ),
            Reply.synthesized("The file has two lines."),
        )
        proc = seepient(
            "run",
            "what is in notes.txt?",
            "--model",
            "openai:gpt-test",
            "--base-url",
            server.base_url,
            "--json",
        )
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr
    events = json_events(proc.stdout)
    assert events[-1]["type"] == "turn_completed" and events[-1]["text"] == "The file has two lines."
    assert events[-1]["usage"]["input_tokens"] == 24
    assert len(requests) == 2
    first, second = requests[0].json(), requests[1].json()
    assert first["model"] == "gpt-test" and first["stream"] is True
    assert {t["function"]["name"] for t in first["tools"]} >= {"read_file", "edit_file", "shell"}
    assert requests[0].headers["authorization"] == f"Bearer sk-{SECRET_MARKER}"
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert "alpha" in tool_message["content"] and "beta" in tool_message["content"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "read_file"


def test_dead_provider_is_a_clear_error(world, seepient):
    with SSEReplayServer() as server:
        server.queue(Reply.error(401, "Incorrect API key provided"))
        proc = seepient("run", "x", "--model", "openai:gpt-test", "--base-url", server.base_url)
    assert proc.returncode == 1
    assert "Incorrect API key" in proc.stderr
    proc = seepient("run", "x", "--model", "openai:gpt-test", "--base-url", "http://127.0.0.1:9/v1")
    assert proc.returncode == 1
    assert "127.0.0.1:9" in proc.stderr or "connect" in proc.stderr.lower()
