"""The Gemini adapter against the local server. No Gemini stream is recorded in the corpus, so these streams
are synthesized in the documented ``streamGenerateContent?alt=sse`` shape."""

from __future__ import annotations

from typing import Any

import pytest

from seepient.models.gemini import GeminiModel
from seepient.protocol import ImagePart, Message, ModelRequest, TextChunk, ToolCall, ToolCallChunk, ToolSpec
from tests.models.helpers import (
    collect,
    collect_until_error,
    only_completion,
    streamed_calls,
    streamed_text,
    track,
)
from tests.support.sse_server import Reply, SSEReplayServer, gemini_chunk

HELLO = ModelRequest(model="label", messages=(Message.user("Hello"),))


def make_model(server: SSEReplayServer, **kwargs: Any) -> GeminiModel:
    kwargs.setdefault("api_key", "AIza-test")
    instance = GeminiModel("gemini-2.5-flash", base_url=server.base_url, **kwargs)
    return track(instance)


async def test_text_streams_chunk_by_chunk_with_usage(sse_server):
    usage = {
        "promptTokenCount": 900,
        "candidatesTokenCount": 12,
        "thoughtsTokenCount": 30,
        "cachedContentTokenCount": 512,
        "totalTokenCount": 942,
    }
    sse_server.queue(
        Reply.gemini_stream(
            gemini_chunk([{"text": "The answer"}]),
            gemini_chunk([{"text": " is 42."}]),
            gemini_chunk([{"text": ""}], finish_reason="STOP", usage=usage, model="gemini-2.5-flash-001"),
        )
    )
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    assert [event.text for event in events if isinstance(event, TextChunk)] == ["The answer", " is 42."]
    assert completion.message.content == "The answer is 42."
    assert completion.finish_reason == "stop" and completion.model == "gemini-2.5-flash-001"
    assert (
        completion.usage.input_tokens,
        completion.usage.output_tokens,
        completion.usage.cached_input_tokens,
    ) == (
        900,
        42,
        512,
    )
    # Adjacent streamed pieces are one part again; the empty closing part is dropped.
    assert completion.message.provider_content.items == ({"text": "The answer is 42."},)


async def test_function_calls_arrive_whole_with_their_ids(sse_server):
    sse_server.queue(
        Reply.gemini_synthesized(
            "Reading both.",
            [
                {"name": "read_file", "arguments": {"path": "a.py"}, "id": "fc-1"},
                {"name": "read_file", "arguments": {"path": "b.py"}, "id": "fc-2"},
            ],
        )
    )
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    assert streamed_calls(events) == {
        0: ("fc-1", "read_file", '{"path": "a.py"}'),
        1: ("fc-2", "read_file", '{"path": "b.py"}'),
    }
    assert completion.finish_reason == "tool_calls"
    assert [(c.id, c.arguments) for c in completion.message.tool_calls] == [
        ("fc-1", {"path": "a.py"}),
        ("fc-2", {"path": "b.py"}),
    ]


async def test_calls_without_ids_get_unique_ones(sse_server):
    sse_server.queue(
        Reply.gemini_synthesized(tool_calls=[{"name": "glob", "arguments": {"pattern": "*"}}] * 2)
    )
    completion = only_completion(await collect(make_model(sse_server)))
    first, second = completion.message.tool_calls
    assert first.id != second.id and first.id.startswith("gemini_call_")


async def test_thought_signatures_go_back_on_the_parts_they_came_with(sse_server):
    sse_server.queue(
        Reply.gemini_synthesized(
            tool_calls=[
                {"name": "get_weather", "arguments": {"city": "Paris"}},
                {"name": "get_weather", "arguments": {"city": "Oslo"}},
            ],
            signature="CiQB0e2Kb7XsSIGNATURE",
        ),
        Reply.gemini_synthesized("Paris is sunny, Oslo is cold."),
    )
    model = make_model(sse_server)
    first = only_completion(await collect(model)).message
    paris, oslo = first.tool_calls
    history = (
        *HELLO.messages,
        first,
        Message.tool_result(paris, "sunny"),
        Message.tool_result(oslo, "lookup failed", is_error=True),
    )
    await collect(model, ModelRequest(model="m", messages=history))
    contents = sse_server.last_request.json()["contents"]
    assert contents == [
        {"role": "user", "parts": [{"text": "Hello"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "CiQB0e2Kb7XsSIGNATURE",
                },
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
            ],
        },
        {
            # Both answers in one turn; ids Gemini did not give are not invented on the wire.
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "lookup failed"}}},
            ],
        },
    ]


async def test_a_native_call_id_is_echoed_in_the_function_response(sse_server):
    sse_server.queue(
        Reply.gemini_synthesized(
            tool_calls=[{"name": "glob", "arguments": {"pattern": "*.py"}, "id": "fc-9"}]
        ),
        Reply.gemini_synthesized("ok"),
    )
    model = make_model(sse_server)
    first = only_completion(await collect(model)).message
    await collect(
        model,
        ModelRequest(
            model="m", messages=(*HELLO.messages, first, Message.tool_result(first.tool_calls[0], "a.py"))
        ),
    )
    response = sse_server.last_request.json()["contents"][2]["parts"][0]["functionResponse"]
    assert response == {"name": "glob", "response": {"output": "a.py"}, "id": "fc-9"}


async def test_thought_parts_are_kept_but_not_streamed_as_answer(sse_server):
    sse_server.queue(
        Reply.gemini_stream(
            gemini_chunk([{"text": "Considering the files", "thought": True}]),
            gemini_chunk([{"text": "Done.", "thoughtSignature": "sig-text"}], finish_reason="STOP"),
        ),
    )
    events = await collect(make_model(sse_server))
    completion = only_completion(events)
    assert streamed_text(events) == "Done." == completion.message.content
    assert completion.message.provider_content.items == (
        {"text": "Considering the files", "thought": True},
        {"text": "Done.", "thoughtSignature": "sig-text"},
    )


TOOLS = (
    ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
)


async def test_request_path_headers_and_body(sse_server):
    call = ToolCall(id="call_openai_1", name="read_file", arguments={"path": "a.py"})
    history = (
        Message.system("You are Seepient."),
        Message.user("Look", images=(ImagePart(media_type="image/png", data="iVBORw0KGgo="),)),
        Message.assistant("Reading.", tool_calls=(call,)),
        Message.tool_result(call, "x = 1"),
        Message.user(
            "More",
            images=(ImagePart(media_type="image/png", url="gs://b/c.png"),),
        ),
    )
    sse_server.queue(Reply.gemini_synthesized("ok"))
    request = ModelRequest(
        model="m",
        messages=history,
        tools=TOOLS,
        max_output_tokens=500,
        temperature=0.5,
        reasoning_effort="high",
    )
    await collect(make_model(sse_server), request)
    sent = sse_server.last_request
    assert sent.path == "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == "AIza-test" and "authorization" not in sent.headers
    assert sent.json() == {
        "systemInstruction": {"parts": [{"text": "You are Seepient."}]},
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Look"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "Reading."},
                    {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "x = 1"}}},
                    {"text": "More"},
                    {"fileData": {"mimeType": "image/png", "fileUri": "gs://b/c.png"}},
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": "Read a file.",
                        "parametersJsonSchema": TOOLS[0].parameters,
                    }
                ]
            }
        ],
        "generationConfig": {
            "maxOutputTokens": 500,
            "temperature": 0.5,
            "thinkingConfig": {"thinkingBudget": 24576},
        },
    }


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        (
            "https://generativelanguage.googleapis.com",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
        ),
        (
            "https://generativelanguage.googleapis.com/v1/",
            "https://generativelanguage.googleapis.com/v1/models/gemini-x:streamGenerateContent?alt=sse",
        ),
    ],
)
def test_the_endpoint_is_built_from_the_api_root(base_url, url):
    for model in ("gemini-x", "models/gemini-x"):
        assert GeminiModel(model, base_url=base_url, api_key=None)._url == url


# --- endings and faults ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "malformed_function_call"),
    ],
)
async def test_finish_reasons(sse_server, reason, finish):
    sse_server.queue(Reply.gemini_synthesized("Partial", finish_reason=reason))
    assert only_completion(await collect(make_model(sse_server))).finish_reason == finish


async def test_a_blocked_prompt_is_a_clear_permanent_error(sse_server):
    sse_server.queue(Reply.gemini_stream({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}))
    _, error = await collect_until_error(make_model(sse_server))
    assert not error.retryable and "PROHIBITED_CONTENT" in str(error)


async def test_a_stream_without_a_finish_reason_is_retryable(sse_server):
    sse_server.queue(Reply.gemini_stream(gemini_chunk([{"text": "Hel"}])))
    events, error = await collect_until_error(make_model(sse_server))
    assert streamed_text(events) == "Hel" and error.retryable and "finishReason" in str(error)


async def test_rate_limit_wait_comes_from_retry_info(sse_server):
    sse_server.queue(
        Reply.gemini_error(429, "Resource has been exhausted", state="RESOURCE_EXHAUSTED", retry_delay="7s")
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and error.status == 429 and error.retry_after_s == 7.0


async def test_unavailable_is_retryable(sse_server):
    sse_server.queue(
        Reply.gemini_error(503, "The model is overloaded. Please try again later.", state="UNAVAILABLE")
    )
    _, error = await collect_until_error(make_model(sse_server))
    assert error.retryable and error.status == 503 and "overloaded" in str(error)


async def test_a_bad_key_answered_with_400_names_the_variable(sse_server):
    sse_server.queue(
        Reply.gemini_error(
            400,
            "API key not valid. Please pass a valid API key.",
            state="INVALID_ARGUMENT",
            reason="API_KEY_INVALID",
        )
    )
    _, error = await collect_until_error(make_model(sse_server, api_key_env="GEMINI_API_KEY"))
    assert not error.retryable and error.status == 400 and "$GEMINI_API_KEY" in str(error)


async def test_an_error_inside_the_stream_stops_it(sse_server):
    sse_server.queue(
        Reply.gemini_stream(
            gemini_chunk([{"text": "Hi"}]),
            {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}},
        )
    )
    events, error = await collect_until_error(make_model(sse_server))
    assert streamed_text(events) == "Hi" and error.retryable and "Internal error" in str(error)
    assert not any(isinstance(event, ToolCallChunk) for event in events)
