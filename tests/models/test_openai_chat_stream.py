"""The Chat Completions adapter against a real local HTTP server: recorded transcripts, request shape, faults."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from typing import Any

import pytest

from seepient.models._http import is_loopback_url
from seepient.models.base import ModelError
from seepient.models.openai_chat import OpenAIChatModel
from seepient.protocol import (
    Completion,
    Message,
    ModelRequest,
    ModelStreamEvent,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolSpec,
)
from tests.models import helpers
from tests.models.helpers import only_completion, track
from tests.support.sse_server import (
    Reply,
    SSEReplayServer,
    chat_chunk,
    corpus_dir,
    data_event,
    transcript_events,
)

TEXT = "openai_chat_completions__test_parse_nothing.sse"
ONE_TOOL = "openai_chat_completions__test_parse_pydantic_tool.sse"
TWO_TOOLS = "openai_chat_completions__test_parse_multiple_pydantic_tools.sse"
STRICT_TOOL = "openai_chat_completions__test_parse_strict_tools.sse"
NON_STRICT_TOOL = "openai_chat_completions__test_allows_non_strict_tools_but_no_parsing.sse"
TOOL_TRANSCRIPTS = [ONE_TOOL, TWO_TOOLS, STRICT_TOOL, NON_STRICT_TOOL]

HELLO = ModelRequest(model="gpt-4o", messages=(Message.user("What's the weather like in SF?"),))


def make_model(server: SSEReplayServer, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("api_key", "sk-test")
    return track(OpenAIChatModel("gpt-4o-2024-08-06", base_url=server.base_url, **kwargs))


async def collect(model: OpenAIChatModel, request: ModelRequest = HELLO) -> list[ModelStreamEvent]:
    return await helpers.collect(model, request)


async def collect_until_error(
    model: OpenAIChatModel, request: ModelRequest = HELLO
) -> tuple[list[ModelStreamEvent], ModelError]:
    return await helpers.collect_until_error(model, request)


def expected_text(entry: dict[str, Any]) -> str:
    # The reprs in INDEX.jsonl were pretty-printed: long strings are wrapped with real newlines, while a
    # newline inside the content would appear escaped as a backslash-n.
    found = {
        match.replace("\n", "")
        for text in entry["expected_final_state_repr_from_test"]
        for match in re.findall(r'content="(.*?)",\s*\n\s*(?:function_call|parsed)=', text, re.S)
    }
    assert len(found) == 1, found
    return found.pop()


def expected_tool_calls(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(id, name, raw arguments) in index order, from the final ParsedChoice repr."""
    choice = next(text for text in entry["expected_final_state_repr_from_test"] if "ParsedChoice(" in text)
    calls = re.findall(r"arguments='(.*?)',\s*name='(.*?)',.*?id='(.*?)',\s*index=(\d+)", choice, re.S)
    assert calls
    assert [int(index) for *_, index in calls] == list(range(len(calls)))
    return [(call_id, name, arguments) for arguments, name, call_id, _ in calls]


def recorded_usage(name: str) -> dict[str, Any]:
    usage_chunks = [
        json.loads(event[len(b"data: ") :])
        for event in transcript_events(name)
        if b'"usage"' in event and b'"choices":[]' in event
    ]
    assert len(usage_chunks) == 1
    return usage_chunks[0]["usage"]


# --- recorded transcripts -------------------------------------------------------------------------------


async def test_text_transcript_streams_the_recorded_content(sse_server, sse_index):
    sse_server.queue(Reply.transcript(TEXT))
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    text_chunks = [event.text for event in events if isinstance(event, TextChunk)]
    expected = expected_text(sse_index[TEXT])
    assert len(text_chunks) > 10
    assert "".join(text_chunks) == expected
    assert completion.message == Message.assistant(expected)
    assert completion.finish_reason == "stop"
    assert completion.model == "gpt-4o-2024-08-06"
    assert not any(isinstance(event, ToolCallChunk) for event in events)


@pytest.mark.parametrize("name", TOOL_TRANSCRIPTS)
async def test_tool_call_transcripts_assemble_the_recorded_calls(sse_server, sse_index, name):
    sse_server.queue(Reply.transcript(name))
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    expected = expected_tool_calls(sse_index[name])
    assert completion.finish_reason == "tool_calls"
    assert completion.message.content == ""
    assert [(call.id, call.name, call.raw_arguments) for call in completion.message.tool_calls] == expected
    for call, (_, _, raw) in zip(completion.message.tool_calls, expected, strict=True):
        assert call.arguments == json.loads(raw)
        assert call.arguments_error is None
    # The chunks carry each call's id and name once, then fragments that add up to its arguments.
    chunks = [event for event in events if isinstance(event, ToolCallChunk)]
    for index, (call_id, name_, raw) in enumerate(expected):
        own = [chunk for chunk in chunks if chunk.index == index]
        assert (own[0].id, own[0].name) == (call_id, name_)
        assert all(chunk.id is None and chunk.name is None for chunk in own[1:])
        assert "".join(chunk.arguments_delta for chunk in own) == raw
        assert len(own) > 2


async def test_parallel_calls_keep_their_order_and_ids(sse_server):
    sse_server.queue(Reply.transcript(TWO_TOOLS))
    completion = only_completion(await collect(make_model(sse_server)))
    first, second = completion.message.tool_calls
    assert (first.id, first.name, first.arguments) == (
        "call_JMW1whyEaYG438VE1OIflxA2",
        "GetWeatherArgs",
        {"city": "Edinburgh", "country": "GB", "units": "c"},
    )
    assert (second.id, second.name, second.arguments) == (
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
        "get_stock_price",
        {"ticker": "AAPL", "exchange": "NASDAQ"},
    )


@pytest.mark.parametrize("name", [TEXT, *TOOL_TRANSCRIPTS])
async def test_usage_comes_from_the_usage_only_final_chunk(sse_server, name):
    sse_server.queue(Reply.transcript(name))
    completion = only_completion(await collect(make_model(sse_server)))
    usage = recorded_usage(name)
    assert completion.usage.input_tokens == usage["prompt_tokens"] > 0
    assert completion.usage.output_tokens == usage["completion_tokens"] > 0
    assert completion.usage.cached_input_tokens == 0


async def test_cached_prompt_tokens_are_reported(sse_server):
    usage = {"prompt_tokens": 900, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 768}}
    sse_server.queue(
        Reply.stream(
            chat_chunk(content="ok", finish_reason="stop"), chat_chunk(usage=usage, choices=False), "[DONE]"
        )
    )
    completion = only_completion(await collect(make_model(sse_server)))
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (900, 3)
    assert completion.usage.cached_input_tokens == 768


async def test_one_model_serves_many_requests_over_one_server(sse_server):
    sse_server.queue(*(Reply.transcript(name) for name in [TEXT, ONE_TOOL, TWO_TOOLS, TEXT]))
    model = make_model(sse_server)
    finishes = [only_completion(await collect(model)).finish_reason for _ in range(4)]
    await model.aclose()
    assert finishes == ["stop", "tool_calls", "tool_calls", "stop"]
    assert len(sse_server.requests) == 4


# --- the request ----------------------------------------------------------------------------------------

READ_TOOL = ToolSpec(
    name="read_file",
    description="Read a file in the workspace.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
SHELL_TOOL = ToolSpec(
    name="shell",
    description="Run a shell command in the sandbox.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


async def test_request_body_maps_the_conversation_and_tools(sse_server):
    call = ToolCall(id="call_1", name="read_file", arguments={"path": "calc.py"})
    request = ModelRequest(
        model="ignored-label",
        messages=(
            Message.system("You are Seepient."),
            Message.user("Fix calc.py"),
            Message.assistant("Let me look.", tool_calls=(call,)),
            Message.tool_result(call, "def add(a, b):\n    return a - b\n"),
            Message.assistant(tool_calls=(ToolCall(id="call_2", name="shell", arguments={"command": "ls"}),)),
            Message.tool_result(ToolCall(id="call_2", name="shell", arguments={}), "denied", is_error=True),
            Message.assistant("Done."),
            Message.user("Thanks"),
        ),
        tools=(READ_TOOL, SHELL_TOOL),
        max_output_tokens=256,
        temperature=0.2,
    )
    sse_server.queue(Reply.transcript(TEXT))
    await collect(make_model(sse_server), request)

    sent = sse_server.last_request
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.json() == {
        "model": "gpt-4o-2024-08-06",
        "messages": [
            {"role": "system", "content": "You are Seepient."},
            {"role": "user", "content": "Fix calc.py"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "calc.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "def add(a, b):\n    return a - b\n"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "shell", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "denied"},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in (READ_TOOL, SHELL_TOOL)
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 256,
        "temperature": 0.2,
    }


async def test_minimal_request_has_no_optional_fields_and_no_key(sse_server):
    sse_server.queue(Reply.transcript(TEXT))
    await collect(make_model(sse_server, api_key=None))
    sent = sse_server.last_request
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "model": "gpt-4o-2024-08-06",
        "messages": [{"role": "user", "content": "What's the weather like in SF?"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_a_streamed_call_goes_back_byte_for_byte(sse_server):
    # The model's own argument text is returned unchanged in the history, also when it was not valid JSON.
    sse_server.queue(
        Reply.transcript(TWO_TOOLS),
        Reply.stream(
            chat_chunk(
                tool_calls=[
                    {"index": 0, "id": "call_bad", "function": {"name": "shell", "arguments": "{oops"}}
                ]
            ),
            chat_chunk(finish_reason="tool_calls"),
            "[DONE]",
        ),
        Reply.transcript(TEXT),
    )
    model = make_model(sse_server)
    first = only_completion(await collect(model)).message
    second = only_completion(await collect(model)).message
    history = (
        Message.user("hi"),
        first,
        *(Message.tool_result(call, "ok") for call in first.tool_calls),
        second,
    )
    history += tuple(Message.tool_result(call, "bad arguments") for call in second.tool_calls)
    await collect(model, ModelRequest(model="x", messages=history))
    messages = sse_server.last_request.json()["messages"]
    assert [call["function"]["arguments"] for call in messages[1]["tool_calls"]] == [
        '{"city": "Edinburgh", "country": "GB", "units": "c"}',
        '{"ticker": "AAPL", "exchange": "NASDAQ"}',
    ]
    assert messages[4]["tool_calls"][0]["function"]["arguments"] == "{oops"


def test_openai_itself_gets_max_completion_tokens():
    model = OpenAIChatModel("o4-mini", base_url="https://api.openai.com/v1/", api_key="k")
    body = model.request_body(
        ModelRequest(model="o4-mini", messages=(Message.user("hi"),), max_output_tokens=64)
    )
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body


async def test_a_tool_result_without_call_id_is_refused_before_sending(sse_server):
    orphan = Message(role="tool", content="output")
    with pytest.raises(ModelError, match="tool_call_id"):
        await collect(make_model(sse_server), ModelRequest(model="x", messages=(Message.user("hi"), orphan)))
    assert sse_server.requests == []


@pytest.mark.parametrize("base_url", ["127.0.0.1:8000/v1", "ftp://example.com/v1", "", "http:///v1"])
def test_a_base_url_that_is_not_http_is_refused_at_construction(base_url):
    with pytest.raises(ModelError, match="not an http"):
        OpenAIChatModel("m", base_url=base_url, api_key=None)


# --- stream shapes from compatible servers --------------------------------------------------------------


def one_call_stream(arguments: str) -> Reply:
    return Reply.stream(
        chat_chunk(
            tool_calls=[{"index": 0, "id": "call_x", "type": "function", "function": {"name": "edit_file"}}]
        ),
        chat_chunk(tool_calls=[{"index": 0, "function": {"arguments": arguments}}]),
        chat_chunk(finish_reason="tool_calls"),
        "[DONE]",
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"path": "a.py", "old_string": "x', "not valid JSON"),
        ('["a.py"]', "must be a JSON object, not an array"),
        ('"a.py"', "must be a JSON object, not a string"),
        ("null", "must be a JSON object, not null"),
    ],
)
async def test_arguments_that_are_not_an_object_are_flagged_and_kept(sse_server, arguments, problem):
    sse_server.queue(one_call_stream(arguments))
    (call,) = only_completion(await collect(make_model(sse_server))).message.tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == arguments
    assert problem in call.arguments_error


async def test_empty_arguments_mean_no_arguments(sse_server):
    sse_server.queue(one_call_stream(""))
    (call,) = only_completion(await collect(make_model(sse_server))).message.tool_calls
    assert (call.name, call.arguments, call.arguments_error) == ("edit_file", {}, None)


async def test_whole_calls_without_index_or_id_get_their_own_slot_and_an_id(sse_server):
    # Older Ollama sends each call whole, without ``index``; some servers omit the id.
    sse_server.queue(
        Reply.stream(
            chat_chunk(
                tool_calls=[{"id": "call_a", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}]
            ),
            chat_chunk(
                tool_calls=[{"id": "call_b", "function": {"name": "read_file", "arguments": '{"path":"b"}'}}]
            ),
            chat_chunk(finish_reason="tool_calls"),
            "[DONE]",
        ),
        Reply.stream(
            chat_chunk(
                tool_calls=[{"index": 0, "function": {"name": "glob", "arguments": '{"pattern":"*"}'}}]
            ),
            chat_chunk(
                tool_calls=[{"index": 1, "function": {"name": "glob", "arguments": '{"pattern":"?"}'}}]
            ),
            chat_chunk(finish_reason="tool_calls"),
            "[DONE]",
        ),
    )
    model = make_model(sse_server)
    calls = only_completion(await collect(model)).message.tool_calls
    assert [(call.id, call.arguments) for call in calls] == [
        ("call_a", {"path": "a"}),
        ("call_b", {"path": "b"}),
    ]
    calls = only_completion(await collect(model)).message.tool_calls
    assert [call.arguments for call in calls] == [{"pattern": "*"}, {"pattern": "?"}]
    assert all(call.id.startswith("call_") for call in calls)
    assert calls[0].id != calls[1].id


async def test_usage_with_the_finish_chunk_and_no_done_marker_still_completes(sse_server):
    finish = chat_chunk(
        content="Hi.", finish_reason="stop", usage={"prompt_tokens": 5, "completion_tokens": 2}
    )
    sse_server.queue(Reply.stream(finish))
    completion = only_completion(await collect(make_model(sse_server)))
    assert completion.message.content == "Hi."
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (5, 2)


async def test_a_refusal_reaches_the_user_as_text(sse_server):
    refusal = chat_chunk()
    refusal["choices"][0]["delta"] = {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    sse_server.queue(Reply.stream(refusal, chat_chunk(finish_reason="stop"), "[DONE]"))
    events = await collect(make_model(sse_server))
    assert [event.text for event in events if isinstance(event, TextChunk)] == ["I can't help with that."]
    assert only_completion(events).message.content == "I can't help with that."


async def test_comments_and_blank_keepalives_are_ignored(sse_server):
    sse_server.queue(
        Reply(events=(b": keep-alive\n\n", data_event(chat_chunk(content="a")), b"data: \n\n"))
        .with_line(3, data_event(chat_chunk(content="b", finish_reason="stop")))
        .with_line(4, data_event("[DONE]"))
    )
    completion = only_completion(await collect(make_model(sse_server)))
    assert completion.message.content == "ab"


async def test_the_server_helper_synthesizes_a_turn_the_adapter_reads_back(sse_server):
    sse_server.queue(
        Reply.synthesized(
            "I will read it.", [{"name": "read_file", "arguments": {"path": "calc.py"}, "id": "c1"}]
        )
    )
    completion = only_completion(await collect(make_model(sse_server)))
    assert completion.message.content == "I will read it."
    assert completion.message.tool_calls == (
        ToolCall(
            id="c1", name="read_file", arguments={"path": "calc.py"}, raw_arguments='{"path": "calc.py"}'
        ),
    )
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (12, 7)


# --- faults ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (
            Reply.error(500, "The server had an error while processing your request.", type="server_error"),
            500,
        ),
        (Reply.error(502, "Bad gateway upstream", type="server_error"), 502),
        (Reply.error(503, "Model overloaded, try later", headers={"Retry-After": "7"}), 503),
    ],
)
async def test_server_errors_are_retryable_and_carry_the_provider_message(sse_server, reply, status):
    sse_server.queue(reply)
    events, error = await collect_until_error(make_model(sse_server))
    provider_message = json.loads(reply.body)["error"]["message"]
    assert events == []
    assert error.retryable and error.status == status
    assert provider_message in str(error)
    assert error.retry_after_s == (7.0 if status == 503 else None)


async def test_rate_limit_is_retryable_with_the_wait_the_provider_asked_for(sse_server):
    sse_server.queue(
        Reply.error(
            429,
            "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 30000.",
            type="tokens",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": "1500", "Retry-After": "2"},
        )
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and error.status == 429
    assert error.retry_after_s == 1.5
    assert "Rate limit reached for gpt-4o" in str(error)


async def test_an_exhausted_quota_is_not_retried(sse_server):
    sse_server.queue(
        Reply.error(
            429, "You exceeded your current quota.", type="insufficient_quota", code="insufficient_quota"
        )
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable
    assert "quota" in str(error) and "You exceeded your current quota." in str(error)


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_names_the_variable_it_came_from(sse_server, status):
    sse_server.queue(
        Reply.error(status, "Incorrect API key provided: sk-test.", type="invalid_request_error")
    )
    _, error = await collect_until_error(make_model(sse_server, api_key_env="OPENAI_API_KEY"))
    assert not error.retryable and error.status == status
    assert "$OPENAI_API_KEY" in str(error)
    assert "Incorrect API key provided" in str(error)


async def test_a_refusal_without_any_key_says_none_was_sent(sse_server):
    sse_server.queue(Reply.error(401, "Missing bearer token"))
    _, error = await collect_until_error(make_model(sse_server, api_key=None))
    assert not error.retryable
    assert "no API key was sent" in str(error) and "apiKeyEnv" in str(error)


async def test_not_found_names_the_model_and_the_endpoint(sse_server):
    sse_server.queue(
        Reply.error(
            404,
            "The model `gpt-4o-2024-08-06` does not exist.",
            type="invalid_request_error",
            code="model_not_found",
        )
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable and error.status == 404
    assert "'gpt-4o-2024-08-06'" in str(error)
    assert f"{sse_server.base_url}/chat/completions" in str(error)
    assert "does not exist" in str(error)


async def test_a_wrong_base_path_is_a_not_found_error(sse_server):
    model = track(
        OpenAIChatModel("m", base_url=sse_server.base_url.removesuffix("/v1") + "/api", api_key=None)
    )
    _, error = await collect_until_error(model)
    assert error.status == 404 and not error.retryable
    assert "Unknown request URL" in str(error)


async def test_ollama_style_and_plain_text_error_bodies_are_quoted(sse_server):
    sse_server.queue(
        Reply(
            status=404,
            body=b'{"error":"model \\"llama9\\" not found, try pulling it first"}',
            content_type="application/json",
        ),
        Reply(status=502, body=b"<html>upstream connect error</html>", content_type="text/html"),
    )
    model = make_model(sse_server, api_key=None)
    _, error = await collect_until_error(model)
    assert 'model "llama9" not found, try pulling it first' in str(error)
    _, error = await collect_until_error(model)
    assert error.retryable and "upstream connect error" in str(error)


async def test_a_bad_request_is_not_retried(sse_server):
    sse_server.queue(
        Reply.error(
            400, "Invalid schema for function 'shell': 'object' is not valid.", type="invalid_request_error"
        )
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable and error.status == 400
    assert "Invalid schema for function 'shell'" in str(error)


async def test_a_connection_cut_mid_stream_is_retryable_after_the_text_so_far(sse_server):
    sse_server.queue(Reply.transcript(TEXT).cut(after=6))
    events, error = await collect_until_error(make_model(sse_server))
    assert error.retryable
    assert "mid-stream" in str(error)
    assert len(events) == 5 and all(isinstance(event, TextChunk) for event in events)


async def test_a_stream_that_ends_before_a_finish_reason_is_retryable(sse_server):
    sse_server.queue(Reply.transcript(TWO_TOOLS).truncated(keep=12))
    events, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and error.status is None
    assert "ended before the model finished" in str(error)
    assert events and not any(isinstance(event, Completion) for event in events)


async def test_a_done_marker_without_a_finish_reason_is_still_incomplete(sse_server):
    sse_server.queue(Reply.stream(chat_chunk(content="partial"), "[DONE]"))
    _, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and "no finish_reason" in str(error)


async def test_a_malformed_data_line_is_a_clear_permanent_error(sse_server):
    sse_server.queue(Reply.transcript(TEXT).with_line(3))
    events, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable
    assert "not JSON" in str(error) and "{not json" in str(error)
    # The three events before it: the role header (empty content), then two words.
    assert [event.text for event in events] == ["I'm", " unable"]


async def test_a_data_line_that_is_not_an_object_is_refused(sse_server):
    sse_server.queue(Reply.stream("[1, 2]"))
    _, error = await collect_until_error(make_model(sse_server))
    assert "not a JSON object" in str(error)


@pytest.mark.parametrize(
    ("error_body", "retryable"),
    [
        ({"message": "The server had an error while processing your request.", "type": "server_error"}, True),
        ({"message": "Overloaded", "type": "overloaded_error"}, True),
        (
            {
                "message": "Context length exceeded",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            },
            False,
        ),
    ],
)
async def test_an_error_object_inside_the_stream_stops_it(sse_server, error_body, retryable):
    sse_server.queue(Reply.stream(chat_chunk(content="Hel"), {"error": error_body}, chat_chunk(content="lo")))
    events, error = await collect_until_error(make_model(sse_server))
    assert [event.text for event in events] == ["Hel"]
    assert error.retryable is retryable
    assert error_body["message"] in str(error)


async def test_an_sse_error_event_stops_the_stream(sse_server):
    sse_server.queue(Reply(events=(b"event: error\ndata: upstream model crashed\n\n",)))
    _, error = await collect_until_error(make_model(sse_server))
    assert "upstream model crashed" in str(error)


async def test_a_first_byte_slower_than_the_timeout_is_retryable(sse_server):
    sse_server.queue(Reply.transcript(TEXT).delayed(60))
    _, error = await collect_until_error(make_model(sse_server, timeout_s=0.3))
    assert error.retryable
    assert "no data" in str(error) and "0.3 s" in str(error)


async def test_a_slow_first_byte_within_the_timeout_is_fine(sse_server):
    sse_server.queue(Reply.transcript(TEXT).delayed(0.2))
    completion = only_completion(await collect(make_model(sse_server, timeout_s=30)))
    assert completion.finish_reason == "stop"


async def test_nothing_listening_is_a_retryable_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = track(OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=None))
    _, error = await collect_until_error(model)
    assert error.retryable
    assert "cannot connect" in str(error) and f"127.0.0.1:{port}" in str(error)


async def test_a_json_answer_instead_of_a_stream_is_a_clear_error(sse_server):
    sse_server.queue(Reply(status=200, body=b'{"choices": []}', content_type="application/json"))
    _, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable
    assert "event stream" in str(error) and "application/json" in str(error)


async def test_a_redirect_is_not_followed_and_names_the_target(sse_server):
    sse_server.queue(
        Reply(status=308, body=b"", headers={"Location": "https://elsewhere.example/v1/chat/completions"})
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable and error.status == 308
    assert "https://elsewhere.example/v1/chat/completions" in str(error)
    assert len(sse_server.requests) == 1


async def test_a_body_that_cannot_be_decoded_is_a_model_error(sse_server):
    sse_server.queue(Reply(events=(b"this is not gzip",), headers={"Content-Encoding": "gzip"}))
    _, error = await collect_until_error(make_model(sse_server))
    assert "could not be read" in str(error) and "DecodingError" in str(error)


async def test_a_faulty_reply_leaves_the_model_usable(sse_server):
    sse_server.queue(
        Reply.transcript(TEXT).cut(after=2),
        Reply.error(500, "boom", type="server_error"),
        Reply.transcript(TEXT).with_line(1),
        Reply.transcript(ONE_TOOL),
    )
    model = make_model(sse_server)
    for _ in range(3):
        await collect_until_error(model)
    assert only_completion(await collect(model)).finish_reason == "tool_calls"


async def test_a_consumer_that_stops_early_does_not_break_the_next_call(sse_server):
    sse_server.queue(Reply.transcript(TEXT), Reply.transcript(TEXT))
    model = make_model(sse_server)
    stream = model.stream(HELLO)
    assert isinstance(await anext(stream), TextChunk)
    await stream.aclose()
    assert only_completion(await collect(model)).finish_reason == "stop"
    await model.aclose()


# --- environment and event loops ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_endpoints_ignore_proxy_variables(sse_server, monkeypatch, host):
    # Port 9 (discard) refuses connections here: a request sent through this "proxy" would fail.
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    sse_server.queue(Reply.transcript(TEXT))
    model = track(OpenAIChatModel("m", base_url=sse_server.base_url.replace("127.0.0.1", host), api_key=None))
    assert only_completion(await collect(model)).finish_reason == "stop"
    assert len(sse_server.requests) == 1


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://localhost:1234/v1", True),
        ("http://LOCALHOST/v1", True),
        ("http://ollama.localhost/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://localhost.example.com/v1", False),
    ],
)
def test_loopback_detection(url, loopback):
    assert is_loopback_url(url) is loopback


def test_one_model_works_across_event_loops(sse_server):
    # The SDK's blocking chat() runs every call in its own event loop.
    sse_server.queue(Reply.transcript(TEXT), Reply.transcript(ONE_TOOL))
    model = OpenAIChatModel("gpt-4o", base_url=sse_server.base_url, api_key=None)

    async def collect_and_close() -> list[ModelStreamEvent]:
        events = await collect(model)
        await model.aclose()
        return events

    first = only_completion(asyncio.run(collect(model)))
    second = only_completion(asyncio.run(collect_and_close()))
    assert (first.finish_reason, second.finish_reason) == ("stop", "tool_calls")


def test_the_corpus_is_where_ci_puts_it():
    assert (corpus_dir() / TEXT).is_file()


def test_importing_the_adapter_does_not_import_the_http_client():
    import subprocess
    import sys

    code = "import sys, seepient.models.resolve; print('httpx2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]


async def test_aclose_is_safe_before_and_after_use(sse_server):
    model = make_model(sse_server)
    await model.aclose()
    sse_server.queue(Reply.transcript(TEXT))
    await collect(model)
    await model.aclose()
    await model.aclose()


async def test_text_and_tool_calls_in_one_turn(sse_server):
    sse_server.queue(
        Reply.synthesized("Reading both.", [{"name": "read_file", "arguments": {"path": "a"}}] * 2)
    )
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    assert completion.message.content == "Reading both."
    assert [call.id for call in completion.message.tool_calls] == ["call_local_0", "call_local_1"]
    first_call_chunk = next(i for i, event in enumerate(events) if isinstance(event, ToolCallChunk))
    assert all(isinstance(event, TextChunk) for event in events[:first_call_chunk])


def test_images_and_reasoning_effort_in_the_chat_body():
    from seepient.protocol import ImagePart

    model = OpenAIChatModel("gpt-4.1", base_url="https://api.openai.com/v1", api_key="k")
    images = (
        ImagePart(media_type="image/png", data="iVBORw0KGgo="),
        ImagePart(media_type="image/jpeg", url="https://example.com/c.jpg"),
    )
    body = model.request_body(
        ModelRequest(
            model="m", messages=(Message.user("What is this?", images=images),), reasoning_effort="high"
        )
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/c.jpg"}},
            ],
        }
    ]
    assert body["reasoning_effort"] == "high"


async def test_the_body_sent_is_the_request_body_as_utf8_json(sse_server):
    sse_server.queue(Reply.transcript(TEXT))
    model = make_model(sse_server)
    request = ModelRequest(
        model="gpt-4o",
        messages=(Message.user('Grüße → 😀 "quoted" \\ back'),),
        tools=(ToolSpec(name="t", description="d", parameters={"type": "object", "x": float("nan")}),),
    )
    await collect(model, request)
    sent = sse_server.last_request
    assert sent.headers["content-type"] == "application/json"
    assert int(sent.headers["content-length"]) == len(sent.body)
    # As httpx's json= sent it: compact, with the text as UTF-8 rather than \u escapes; a NaN (which JSON
    # cannot hold) as null.
    assert "Grüße → 😀".encode() in sent.body and b'": ' not in sent.body
    expected = model.request_body(request)
    expected["tools"][0]["function"]["parameters"]["x"] = None
    assert json.loads(sent.body) == expected


def test_the_bytes_sent_are_the_request_body_encoded_whatever_earlier_requests_left_remembered():
    from seepient.models._http import encode_body
    from seepient.protocol import ImagePart, ToolCall

    call = ToolCall(id="c1", name="shell", arguments={"command": "ls -la ünïcode"})
    history: list[Message] = [
        Message.system("You are a test. ✓"),
        Message.user("look", images=(ImagePart(media_type="image/png", data="iVBORw0KGgo="),)),
        Message.assistant("", (call,)),
        Message.tool_result(call, 'out "quoted" \\ \n\t\x00 😀'),
    ]
    tools = (
        ToolSpec(name="shell", description="runs", parameters={"type": "object", "n": float("inf")}),
        ToolSpec(name="read", description="reads", parameters={"type": "object", "properties": {}}),
    )
    for base_url in ("https://api.openai.com/v1", "http://127.0.0.1:9/v1"):
        model = OpenAIChatModel("gpt-4o", base_url=base_url, api_key="k")
        requests = [
            ModelRequest(model="m", messages=tuple(history[:2])),
            ModelRequest(model="m", messages=tuple(history), tools=tools, max_output_tokens=7),
            # The same objects again, with options: what was remembered must still be what is sent.
            ModelRequest(
                model="m", messages=tuple(history), tools=tools[:1], temperature=0.5, reasoning_effort="low"
            ),
            ModelRequest(
                model="m", messages=(*history, Message.user("next")), tools=tools, temperature=float("nan")
            ),
        ]
        for request in requests:
            assert model.request_bytes(request) == encode_body(model.request_body(request))
    # An object freed and another made where it was is encoded afresh, not taken for the first.
    model = OpenAIChatModel("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="k")
    seen: set[int] = set()
    reused = False
    for index in range(200):
        message = Message.user(f"message {index}")
        reused = reused or id(message) in seen
        seen.add(id(message))
        request = ModelRequest(model="m", messages=(message,))
        assert model.request_bytes(request) == encode_body(model.request_body(request))
        del message, request
    assert reused  # the case above did happen
    # What was remembered of freed objects is not kept: a long session does not grow by its dead messages.
    assert len(model._parts) <= 1
