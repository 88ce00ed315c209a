"""The Anthropic Messages adapter against the local server: recorded transcripts (the truncated one too), the
request shape, thinking blocks and server tool blocks sent back, cache breakpoints, faults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seepient.models.anthropic import AnthropicModel
from seepient.protocol import (
    Completion,
    ImagePart,
    Message,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolSpec,
)
from tests.models.helpers import (
    collect,
    collect_until_error,
    only_completion,
    streamed_calls,
    streamed_text,
    track,
)
from tests.support.sse_server import Reply, SSEReplayServer, named_event, transcript_events

BASIC = "anthropic_messages__basic_response.sse"
TOOL_USE = "anthropic_messages__tool_use_response.sse"
TRUNCATED = "anthropic_messages__incomplete_partial_json_response.sse"
SEARCH = "anthropic_messages__pydantic_ai__test_anthropic_native_tool_search_streaming__interaction0.sse"
AFTER_SEARCH = (
    "anthropic_messages__pydantic_ai__test_anthropic_native_tool_search_streaming__interaction1.sse"
)
SDK_FIXTURES = [BASIC, TOOL_USE, TRUNCATED]
TRANSCRIPTS = [*SDK_FIXTURES, SEARCH, AFTER_SEARCH]

HELLO = ModelRequest(model="label", messages=(Message.user("Hello"),))
EPHEMERAL = {"type": "ephemeral"}


def make_model(server: SSEReplayServer, **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("api_key", "sk-ant-test")
    instance = AnthropicModel("claude-sonnet-4-5", base_url=server.base_url, **kwargs)
    return track(instance)


def payloads(name: str) -> list[dict[str, Any]]:
    return [json.loads(block.split(b"data: ", 1)[1]) for block in transcript_events(name)]


def without_cache_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_cache_markers(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [without_cache_markers(item) for item in value]
    return value


# --- recorded transcripts -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SDK_FIXTURES)
async def test_the_sdk_fixtures_give_the_sdks_final_message(sse_server, sse_index, name):
    expected = sse_index[name]["expected"]["final_message"]
    sse_server.queue(Reply.transcript(name))
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    texts = [block["text"] for block in expected["content"] if block["type"] == "text"]
    uses = [block for block in expected["content"] if block["type"] == "tool_use"]
    assert streamed_text(events) == "".join(texts) == completion.message.content
    assert [(c.id, c.name, c.arguments) for c in completion.message.tool_calls] == [
        (use["id"], use["name"], use["input"]) for use in uses
    ]
    assert completion.model == expected["model"]
    stop = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}[expected["stop_reason"]]
    assert completion.finish_reason == stop
    if "usage" in expected:
        assert completion.usage.input_tokens == expected["usage"]["input_tokens"]
        assert completion.usage.output_tokens == expected["usage"]["output_tokens"]
    # What goes back next turn is the message's blocks, in order.
    assert list(completion.message.provider_content.items) == expected["content"]


@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_every_tool_input_fragment_streams_as_it_arrives(sse_server, name):
    sse_server.queue(Reply.transcript(name))
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    recorded = payloads(name)
    tool_blocks = {
        event["index"]
        for event in recorded
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use"
    }
    fragments = [
        event["delta"]["partial_json"]
        for event in recorded
        if event["type"] == "content_block_delta"
        and event["index"] in tool_blocks
        and event["delta"]["type"] == "input_json_delta"
    ]
    calls = streamed_calls(events)
    assert "".join(arguments for _, _, arguments in calls.values()) == "".join(fragments)
    assert [(call_id, name_) for call_id, name_, _ in calls.values()] == [
        (c.id, c.name) for c in completion.message.tool_calls
    ]
    # Each text delta is one chunk, in order; pings and other event types add nothing.
    text_deltas = [
        event["delta"]["text"]
        for event in recorded
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta"
    ]
    chunks = [event.text for event in events if isinstance(event, TextChunk) and event.text != "\n\n"]
    assert chunks == text_deltas


async def test_the_truncated_transcript_keeps_complete_items_and_refuses_the_call(sse_server, sse_index):
    expected = sse_index[TRUNCATED]["expected"]["final_message"]["content"][1]["input"]
    sse_server.queue(Reply.transcript(TRUNCATED))
    completion = only_completion(await collect(make_model(sse_server)))
    (call,) = completion.message.tool_calls
    # The same reading as the vendor SDK's partial-JSON parser: complete members and list items, nothing guessed.
    assert call.arguments == expected
    assert call.raw_arguments.endswith('\n"Filing taxes')
    assert "cut off" in call.arguments_error and "max_tokens" in call.arguments_error
    assert completion.finish_reason == "length"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (450, 124)


async def test_server_tool_blocks_are_kept_and_not_run_here(sse_server):
    sse_server.queue(Reply.transcript(SEARCH))
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    assert [call.name for call in completion.message.tool_calls] == ["get_exchange_rate"]
    assert [chunk.name for chunk in events if isinstance(chunk, ToolCallChunk) and chunk.name] == [
        "get_exchange_rate"
    ]
    assert completion.message.content == (
        "Let me search for a tool that can provide current exchange rate information.\n\n"
        "I found the right tool! Let me fetch the current USD to EUR exchange rate for you."
    )
    # message_delta's usage is cumulative and replaces message_start's.
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (1591, 175)


async def test_the_second_request_is_the_recorded_one(sse_server, sse_index):
    recorded = sse_index[AFTER_SEARCH]["request_body"]
    sse_server.queue(Reply.transcript(SEARCH), Reply.transcript(AFTER_SEARCH))
    model = make_model(sse_server)
    question = Message.user("What is the current USD to EUR exchange rate?")
    first = only_completion(await collect(model, ModelRequest(model="m", messages=(question,)))).message
    history = (question, first, Message.tool_result(first.tool_calls[0], "1 USD = 0.92 EUR"))
    completion = only_completion(await collect(model, ModelRequest(model="m", messages=history)))
    assert completion.message.content.startswith("The current exchange rate is **1 USD = 0.92 EUR**")
    sent = sse_server.last_request.json()
    # Text, server_tool_use, tool_search_tool_result, text, tool_use, then the tool result: block for block.
    assert without_cache_markers(sent["messages"]) == recorded["messages"]
    assert sent["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL


async def test_thinking_blocks_go_back_first_with_their_signature_unchanged(sse_server):
    sse_server.queue(
        Reply.anthropic_synthesized(
            "I will read it.",
            [{"name": "read_file", "arguments": {"path": "calc.py"}, "id": "toolu_1"}],
            thinking=(
                "The user wants calc.py read first.",
                "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
            ),
        ),
        Reply.anthropic_synthesized("Done."),
    )
    model = make_model(sse_server)
    events = await collect(model, HELLO.model_copy(update={"reasoning_effort": "medium"}))
    first = only_completion(events).message
    assert streamed_text(events) == "I will read it." == first.content
    history = (*HELLO.messages, first, Message.tool_result(first.tool_calls[0], "def add(): ..."))
    await collect(model, ModelRequest(model="m", messages=history, reasoning_effort="medium"))
    assistant = sse_server.last_request.json()["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "The user wants calc.py read first.",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
            },
            {"type": "text", "text": "I will read it."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "calc.py"}},
        ],
    }


async def test_thinking_streams_as_reasoning_apart_from_the_answer(sse_server):
    sse_server.queue(
        Reply.anthropic_synthesized("The answer.", thinking=("First I weigh the options.", "sig-1"))
    )
    events = await collect(make_model(sse_server), HELLO.model_copy(update={"reasoning_effort": "low"}))
    reasoning = "".join(event.text for event in events if isinstance(event, ReasoningChunk))
    assert reasoning == "First I weigh the options."
    assert streamed_text(events) == "The answer." == only_completion(events).message.content
    # Reasoning comes before the answer's first word, as the provider sent it.
    kinds = [type(event).__name__ for event in events if isinstance(event, ReasoningChunk | TextChunk)]
    assert kinds.index("TextChunk") > kinds.index("ReasoningChunk")


async def test_redacted_thinking_goes_back_as_received(sse_server):
    redacted = {
        "type": "redacted_thinking",
        "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr",
    }
    blocks = [
        {
            "type": "message_start",
            "message": {"model": "claude-test", "usage": {"input_tokens": 5, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": redacted},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    sse_server.queue(Reply(events=tuple(map(named_event, blocks))), Reply.anthropic_synthesized("ok"))
    model = make_model(sse_server)
    first = only_completion(await collect(model)).message
    await collect(model, ModelRequest(model="m", messages=(*HELLO.messages, first, Message.user("again"))))
    assert sse_server.last_request.json()["messages"][1]["content"] == [
        redacted,
        {"type": "text", "text": "Hi."},
    ]


# --- the request ----------------------------------------------------------------------------------------

READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
SHELL = ToolSpec(
    name="shell",
    description="Run a command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


async def test_request_body_headers_tools_results_and_images(sse_server):
    read = ToolCall(id="toolu_a", name="read_file", arguments={"path": "a.py"})
    shell = ToolCall(id="toolu_b", name="shell", arguments={"command": "rm -rf /"})
    history = (
        Message.system("You are Seepient."),
        Message.user("What is in this?", images=(ImagePart(media_type="image/png", data="iVBORw0KGgo="),)),
        Message.assistant("Two things at once.", tool_calls=(read, shell)),
        Message.tool_result(read, "x = 1\n"),
        Message.tool_result(shell, "Denied by policy", is_error=True),
        Message.user(
            "And this?", images=(ImagePart(media_type="image/jpeg", url="https://example.com/b.jpg"),)
        ),
    )
    sse_server.queue(Reply.transcript(BASIC))
    await collect(
        make_model(sse_server),
        ModelRequest(model="m", messages=history, tools=(READ, SHELL), temperature=0.3),
    )
    sent = sse_server.last_request
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "system": [{"type": "text", "text": "You are Seepient.", "cache_control": EPHEMERAL}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                    },
                    {"type": "text", "text": "What is in this?"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Two things at once."},
                    {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.py"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "shell", "input": {"command": "rm -rf /"}},
                ],
            },
            {
                # Both results and the next question in one user turn, results first.
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_a",
                        "content": [{"type": "text", "text": "x = 1\n"}],
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_b",
                        "content": [{"type": "text", "text": "Denied by policy"}],
                        "is_error": True,
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/b.jpg"}},
                    {"type": "text", "text": "And this?", "cache_control": EPHEMERAL},
                ],
            },
        ],
        "tools": [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in (READ, SHELL)
        ],
        "stream": True,
        "temperature": 0.3,
    }


def test_without_a_system_prompt_the_tools_end_the_cached_prefix():
    model = AnthropicModel("claude-x", base_url="https://api.anthropic.com", api_key="k")
    body = model.request_body(ModelRequest(model="m", messages=(Message.user("hi"),), tools=(READ, SHELL)))
    assert "cache_control" not in body["tools"][0] and body["tools"][1]["cache_control"] == EPHEMERAL
    assert body["messages"][0]["content"][0]["cache_control"] == EPHEMERAL


def test_caching_can_be_turned_off():
    model = AnthropicModel(
        "claude-x", base_url="https://api.anthropic.com", api_key="k", prompt_caching=False
    )
    body = model.request_body(ModelRequest(model="m", messages=(Message.system("s"), Message.user("hi"))))
    assert "cache_control" not in json.dumps(body)


def test_a_thinking_budget_adds_to_max_tokens_and_drops_temperature():
    model = AnthropicModel("claude-x", base_url="https://api.anthropic.com/v1", api_key="k")
    body = model.request_body(
        ModelRequest(
            model="m",
            messages=(Message.user("hi"),),
            max_output_tokens=1000,
            temperature=0.2,
            reasoning_effort="low",
        )
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048 and "temperature" not in body


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:9/", "http://127.0.0.1:9", "http://127.0.0.1:9/v1"])
def test_a_bare_host_gets_the_api_version(base_url):
    model = AnthropicModel("claude-x", base_url=base_url, api_key=None)
    assert model._url == "http://127.0.0.1:9/v1/messages"


def test_the_cache_marker_is_not_put_into_the_stored_message():
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    text = {"type": "text", "text": "Hi"}
    from seepient.protocol import ProviderContent

    message = Message(
        role="assistant",
        content="Hi",
        provider_content=ProviderContent(format="anthropic", items=(text, thinking)),
    )
    model = AnthropicModel("claude-x", base_url="https://api.anthropic.com", api_key="k")
    body = model.request_body(ModelRequest(model="m", messages=(Message.user("a"), message)))
    # Thinking blocks cannot carry a breakpoint: the one before it does; the kept blocks are not touched.
    assert body["messages"][-1]["content"] == [{**text, "cache_control": EPHEMERAL}, thinking]
    assert "cache_control" not in message.provider_content.items[0]


# --- faults ---------------------------------------------------------------------------------------------


async def test_overload_and_rate_limits_are_retryable(sse_server):
    sse_server.queue(
        Reply.anthropic_error(529, "overloaded_error", "Overloaded"),
        Reply.anthropic_error(
            429, "rate_limit_error", "Number of request tokens exceeded", headers={"retry-after": "3"}
        ),
    )
    model = make_model(sse_server)
    _, overloaded = await collect_until_error(model)
    assert overloaded.retryable and overloaded.status == 529 and "overloaded" in str(overloaded)
    _, limited = await collect_until_error(model)
    assert limited.retryable and limited.retry_after_s == 3.0 and "Number of request tokens" in str(limited)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
    ],
)
async def test_client_errors_are_not_retryable(sse_server, status, kind):
    sse_server.queue(Reply.anthropic_error(status, kind, f"{kind} happened"))
    _, error = await collect_until_error(make_model(sse_server, api_key_env="ANTHROPIC_API_KEY"))
    assert not error.retryable and error.status == status and f"{kind} happened" in str(error)
    if status in (401, 403):
        assert "$ANTHROPIC_API_KEY" in str(error)


async def test_an_error_event_mid_stream_is_retryable_when_it_is_an_overload(sse_server):
    overload = named_event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    sse_server.queue(Reply(events=(*transcript_events(BASIC)[:4], overload)))
    events, error = await collect_until_error(make_model(sse_server))
    assert streamed_text(events) == "Hello"
    assert error.retryable and "overloaded_error" in str(error)


async def test_unknown_event_types_are_ignored(sse_server):
    future = b'event: content_block_flourish\ndata: {"type":"content_block_flourish","index":0}\n\n'
    sse_server.queue(Reply.transcript(BASIC).with_line(3, future))
    completion = only_completion(await collect(make_model(sse_server)))
    assert completion.message.content == "Hello there!"


async def test_a_stream_without_a_stop_reason_is_retryable(sse_server):
    sse_server.queue(Reply.transcript(TOOL_USE).truncated(keep=10))
    events, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and "no stop_reason" in str(error)
    assert not any(isinstance(event, Completion) for event in events)


async def test_a_reset_mid_stream_is_retryable_after_the_text_so_far(sse_server):
    sse_server.queue(Reply.transcript(BASIC).reset_after(5))
    events, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and "mid-stream" in str(error)
    assert streamed_text(events) == "Hello there"
