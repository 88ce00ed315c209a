"""The OpenAI Responses adapter against the local server: recorded transcripts, the request shape, reasoning
items sent back, faults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seepient.models.openai_responses import OpenAIResponsesModel
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
from tests.support.sse_server import (
    Reply,
    SSEReplayServer,
    data_event,
    named_event,
    transcript_events,
)

TOOL_CALL = "openai_responses__pydantic_ai__test_openai_responses_stream__interaction0.sse"
TEXT_AFTER_TOOL = "openai_responses__pydantic_ai__test_openai_responses_stream__interaction1.sse"
REASONING = "openai_responses__pydantic_ai__test_openai_responses_streaming_usage__interaction0.sse"
TRANSCRIPTS = [TOOL_CALL, TEXT_AFTER_TOOL, REASONING]

QUESTION = ModelRequest(model="label", messages=(Message.user("What is the capital of France?"),))
GET_CAPITAL = ToolSpec(
    name="get_capital",
    description="",
    parameters={
        "additionalProperties": False,
        "properties": {"country": {"type": "string"}},
        "required": ["country"],
        "type": "object",
    },
)


def make_model(server: SSEReplayServer, model: str = "gpt-4o", **kwargs: Any) -> OpenAIResponsesModel:
    kwargs.setdefault("api_key", "sk-test")
    instance = OpenAIResponsesModel(model, base_url=server.base_url, **kwargs)
    return track(instance)


def final_response(name: str) -> dict[str, Any]:
    """The ``response`` object of the transcript's response.completed event: what the API says it sent."""
    for block in reversed(transcript_events(name)):
        payload = json.loads(block.split(b"data: ", 1)[1])
        if payload["type"] == "response.completed":
            return payload["response"]
    raise AssertionError(f"{name} has no response.completed")


def event_types(name: str) -> set[str]:
    return {json.loads(block.split(b"data: ", 1)[1])["type"] for block in transcript_events(name)}


# --- recorded transcripts -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_each_transcript_streams_what_the_final_response_holds(sse_server, name):
    sse_server.queue(Reply.transcript(name))
    events = await collect(make_model(sse_server), QUESTION)
    completion = only_completion(events)
    response = final_response(name)
    texts = [
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    ]
    calls = [
        (item["call_id"], item["name"], item["arguments"])
        for item in response["output"]
        if item["type"] == "function_call"
    ]
    assert streamed_text(events) == "".join(texts) == completion.message.content
    assert [(c.id, c.name, c.raw_arguments) for c in completion.message.tool_calls] == calls
    assert [streamed_calls(events)[index] for index in range(len(calls))] == calls
    for call, (_, _, raw) in zip(completion.message.tool_calls, calls, strict=True):
        assert call.arguments == json.loads(raw) and call.arguments_error is None
    assert completion.finish_reason == ("tool_calls" if calls else "stop")
    assert completion.model == response["model"]
    usage = response["usage"]
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (
        usage["input_tokens"],
        usage["output_tokens"],
    )
    assert completion.usage.cached_input_tokens == usage["input_tokens_details"]["cached_tokens"]
    # The output items are kept exactly as the API gave them, to be sent back.
    assert completion.message.provider_content is not None
    assert completion.message.provider_content.format == "openai-responses"
    assert list(completion.message.provider_content.items) == response["output"]


def test_the_transcripts_cover_the_event_types_the_adapter_handles():
    seen = set().union(*(event_types(name) for name in TRANSCRIPTS))
    assert seen == {
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.completed",
    }


async def test_a_tool_call_streams_its_id_and_name_first_then_argument_fragments(sse_server):
    sse_server.queue(Reply.transcript(TOOL_CALL))
    events = await collect(make_model(sse_server), QUESTION)
    chunks = [event for event in events if isinstance(event, ToolCallChunk)]
    assert (chunks[0].id, chunks[0].name, chunks[0].arguments_delta) == (
        "call_kL0PCQV7M2WMoVX8V8OtYSAL",
        "get_capital",
        "",
    )
    assert [chunk.arguments_delta for chunk in chunks[1:]] == ['{"', "country", '":"', "France", '"}']
    assert all(chunk.id is None and chunk.index == 0 for chunk in chunks[1:])


async def test_reasoning_is_kept_encrypted_and_counted_as_output(sse_server):
    sse_server.queue(Reply.transcript(REASONING))
    completion = only_completion(await collect(make_model(sse_server, "gpt-5"), QUESTION))
    reasoning = completion.message.provider_content.items[0]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"].startswith("gAAAAABoyXvy")
    assert completion.usage.output_tokens == 469  # 448 of them reasoning
    assert completion.message.tool_calls[0].arguments == {"result": 6666}


# --- the request ----------------------------------------------------------------------------------------


async def test_reasoning_summary_deltas_stream_as_reasoning_and_not_as_text(sse_server):
    synthesized = Reply.responses_synthesized("Six.", reasoning="enc")
    summary = [
        data_event({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
        data_event({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Adding "}),
        data_event({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "them up."}),
        data_event({"type": "response.reasoning_summary_text.done", "output_index": 0, "text": "x"}),
    ]
    sse_server.queue(Reply(events=(synthesized.events[0], *summary, *synthesized.events[1:])))
    events = await collect(make_model(sse_server, "gpt-5"), QUESTION)
    assert [e.text for e in events if isinstance(e, ReasoningChunk)] == ["Adding ", "them up."]
    assert streamed_text(events) == "Six." == only_completion(events).message.content


async def test_the_first_request_has_the_recorded_shape(sse_server, sse_index):
    recorded = sse_index[TOOL_CALL]["request_body"]
    sse_server.queue(Reply.transcript(TOOL_CALL))
    await collect(make_model(sse_server), QUESTION.model_copy(update={"tools": (GET_CAPITAL,)}))
    sent = sse_server.last_request
    assert (sent.method, sent.path) == ("POST", "/v1/responses")
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["accept"] == "text/event-stream"
    body = sent.json()
    assert body["input"] == recorded["input"]
    assert body["model"] == recorded["model"] and body["stream"] is True
    (tool,) = body["tools"]
    (recorded_tool,) = recorded["tools"]
    assert {key: tool[key] for key in ("type", "name", "description", "parameters")} == {
        key: recorded_tool[key] for key in ("type", "name", "description", "parameters")
    }
    # Seepient's schemas have optional arguments, which strict mode would refuse.
    assert tool["strict"] is False
    assert body["store"] is False
    assert "include" not in body and "instructions" not in body


async def test_the_second_request_sends_the_call_back_with_its_output(sse_server, sse_index):
    recorded = sse_index[TEXT_AFTER_TOOL]["request_body"]["input"]
    sse_server.queue(Reply.transcript(TOOL_CALL), Reply.transcript(TEXT_AFTER_TOOL))
    model = make_model(sse_server)
    first = only_completion(await collect(model, QUESTION)).message
    (call,) = first.tool_calls
    history = (*QUESTION.messages, first, Message.tool_result(call, "Paris"))
    completion = only_completion(await collect(model, ModelRequest(model="label", messages=history)))
    assert completion.message.content == "The capital of France is Paris."
    sent = sse_server.last_request.json()["input"]
    assert sent[0] == recorded[0]
    # The function_call output item goes back whole (id, status and all), as the API returned it.
    assert sent[1] == final_response(TOOL_CALL)["output"][0]
    assert sent[2] == {"type": "function_call_output", "call_id": call.id, "output": "Paris"}
    assert {key: sent[1][key] for key in ("type", "name", "arguments")} == {
        key: recorded[1][key] for key in ("type", "name", "arguments")
    }
    assert sent[2]["output"] == recorded[2]["output"] and sent[1]["call_id"] == sent[2]["call_id"]


async def test_reasoning_items_go_back_before_the_call_they_led_to(sse_server):
    sse_server.queue(Reply.transcript(REASONING), Reply.transcript(TEXT_AFTER_TOOL))
    model = make_model(sse_server, "gpt-5")
    first = only_completion(await collect(model, QUESTION)).message
    history = (*QUESTION.messages, first, Message.tool_result(first.tool_calls[0], "6666"))
    await collect(model, ModelRequest(model="label", messages=history, reasoning_effort="low"))
    body = sse_server.last_request.json()
    output = final_response(REASONING)["output"]
    assert body["input"][1:3] == output
    assert body["input"][1]["encrypted_content"] == output[0]["encrypted_content"]
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low"} and body["store"] is False


async def test_reasoning_is_not_sent_to_another_model(sse_server):
    sse_server.queue(Reply.transcript(REASONING), Reply.transcript(TEXT_AFTER_TOOL))
    first = only_completion(await collect(make_model(sse_server, "gpt-5"), QUESTION)).message
    history = (*QUESTION.messages, first, Message.tool_result(first.tool_calls[0], "6666"))
    await collect(make_model(sse_server, "gpt-4o"), ModelRequest(model="label", messages=history))
    sent = sse_server.last_request.json()["input"]
    assert [item.get("type") for item in sent] == [None, "function_call", "function_call_output"]
    assert "include" not in sse_server.last_request.json()


async def test_an_edited_message_is_sent_from_its_fields_not_the_stale_items(sse_server):
    sse_server.queue(Reply.transcript(TEXT_AFTER_TOOL), Reply.transcript(TEXT_AFTER_TOOL))
    model = make_model(sse_server)
    answer = only_completion(await collect(model, QUESTION)).message
    edited = answer.model_copy(update={"content": "Paris."})
    await collect(
        model, ModelRequest(model="label", messages=(*QUESTION.messages, edited, Message.user("ok")))
    )
    sent = sse_server.last_request.json()["input"]
    assert sent[1] == {"role": "assistant", "content": "Paris."}


async def test_a_conversation_from_another_provider_is_sent_from_its_fields(sse_server):
    call = ToolCall(id="toolu_1", name="read_file", arguments={"path": "a.py"})
    history = (
        Message.system("You are Seepient."),
        Message.system("Project rules."),
        Message.user("Look at a.py", images=(ImagePart(media_type="image/png", data="iVBORw0KGgo="),)),
        Message.assistant("Reading.", tool_calls=(call,)),
        Message.tool_result(call, "print(1)\n"),
        Message.user("see", images=(ImagePart(media_type="image/jpeg", url="https://example.com/a.jpg"),)),
    )
    sse_server.queue(Reply.transcript(TEXT_AFTER_TOOL))
    request = ModelRequest(model="label", messages=history, max_output_tokens=300, temperature=0.1)
    await collect(make_model(sse_server), request)
    body = sse_server.last_request.json()
    assert body["instructions"] == "You are Seepient.\n\nProject rules."
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look at a.py"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        },
        {"role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "toolu_1", "name": "read_file", "arguments": '{"path": "a.py"}'},
        {"type": "function_call_output", "call_id": "toolu_1", "output": "print(1)\n"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "https://example.com/a.jpg"},
            ],
        },
    ]
    assert (body["max_output_tokens"], body["temperature"]) == (300, 0.1)


@pytest.mark.parametrize(("model", "reasons"), [("gpt-5", True), ("o4-mini", True), ("gpt-4.1", False)])
def test_encrypted_reasoning_is_asked_for_only_from_reasoning_models(model, reasons):
    adapter = OpenAIResponsesModel(model, base_url="https://api.openai.com/v1", api_key="k")
    body = adapter.request_body(QUESTION)
    assert ("include" in body) is reasons


async def test_synthesized_text_and_calls_with_reasoning(sse_server):
    sse_server.queue(
        Reply.responses_synthesized(
            "Reading both files.",
            [
                {"name": "read_file", "arguments": {"path": "a"}},
                {"name": "read_file", "arguments": {"path": "b"}},
            ],
            reasoning="enc-1",
        )
    )
    events = await collect(make_model(sse_server, "gpt-5"), QUESTION)
    completion = only_completion(events)
    assert completion.message.content == "Reading both files."
    assert [(c.id, c.arguments) for c in completion.message.tool_calls] == [
        ("call_local_0", {"path": "a"}),
        ("call_local_1", {"path": "b"}),
    ]
    assert [item["type"] for item in completion.message.provider_content.items] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]


async def test_two_output_messages_read_as_two_paragraphs(sse_server):
    def message(index: int, text: str) -> list[dict[str, Any]]:
        item = {"id": f"msg_{index}", "type": "message", "role": "assistant", "content": []}
        return [
            {"type": "response.output_item.added", "output_index": index, "item": item},
            {"type": "response.output_text.delta", "output_index": index, "content_index": 0, "delta": text},
        ]

    done = {
        "type": "response.completed",
        "response": {"model": "gpt-4o", "status": "completed", "output": [], "usage": None},
    }
    sse_server.queue(
        Reply(events=tuple(map(named_event, [*message(0, "First."), *message(1, "Second."), done])))
    )
    events = await collect(make_model(sse_server), QUESTION)
    assert [event.text for event in events if isinstance(event, TextChunk)] == ["First.", "\n\n", "Second."]
    assert only_completion(events).message.content == "First.\n\nSecond."


# --- faults ---------------------------------------------------------------------------------------------


async def test_an_incomplete_response_finishes_with_length_and_flags_a_cut_call(sse_server):
    events = [json.loads(block.split(b"data: ", 1)[1]) for block in transcript_events(TOOL_CALL)[:6]]
    incomplete = {
        "type": "response.incomplete",
        "response": {
            "model": "gpt-4o",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [],
            "usage": {"input_tokens": 9, "output_tokens": 3},
        },
    }
    sse_server.queue(Reply(events=tuple(map(named_event, [*events, incomplete]))))
    completion = only_completion(await collect(make_model(sse_server), QUESTION))
    assert completion.finish_reason == "length"
    (call,) = completion.message.tool_calls
    assert call.raw_arguments == '{"country":"'
    assert "max_output_tokens" in call.arguments_error and "not valid JSON" in call.arguments_error


@pytest.mark.parametrize(
    ("code", "retryable"), [("server_error", True), ("rate_limit_exceeded", True), ("invalid_prompt", False)]
)
async def test_a_failed_response_is_an_error_retryable_by_its_code(sse_server, code, retryable):
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": code, "message": f"it failed: {code}"}},
    }
    sse_server.queue(Reply(events=(*transcript_events(TEXT_AFTER_TOOL)[:5], named_event(failed))))
    events, error = await collect_until_error(make_model(sse_server), QUESTION)
    assert streamed_text(events) == "The"
    assert error.retryable is retryable and f"it failed: {code}" in str(error)


async def test_an_error_event_stops_the_stream(sse_server):
    error_event = {
        "type": "error",
        "code": "server_error",
        "message": "The server had an error",
        "param": None,
    }
    sse_server.queue(Reply(events=(named_event(error_event),)))
    _, error = await collect_until_error(make_model(sse_server), QUESTION)
    assert error.retryable and "The server had an error" in str(error)


async def test_a_stream_without_completion_is_retryable(sse_server):
    sse_server.queue(Reply.transcript(TEXT_AFTER_TOOL).truncated(keep=8))
    events, error = await collect_until_error(make_model(sse_server), QUESTION)
    assert error.retryable and "response.completed" in str(error)
    assert not any(isinstance(event, Completion) for event in events)


async def test_http_errors_use_the_openai_error_shape(sse_server):
    sse_server.queue(
        Reply.error(429, "Rate limit reached", code="rate_limit_exceeded", headers={"retry-after-ms": "250"}),
        Reply.error(401, "Incorrect API key provided", type="invalid_request_error"),
    )
    model = make_model(sse_server, api_key_env="OPENAI_API_KEY")
    _, limited = await collect_until_error(model, QUESTION)
    assert limited.retryable and limited.status == 429 and limited.retry_after_s == 0.25
    _, refused = await collect_until_error(model, QUESTION)
    assert not refused.retryable and "$OPENAI_API_KEY" in str(refused)


async def test_malformed_sse_is_a_permanent_error(sse_server):
    sse_server.queue(Reply.transcript(TEXT_AFTER_TOOL).with_line(4))
    events, error = await collect_until_error(make_model(sse_server), QUESTION)
    assert not error.retryable and "not JSON" in str(error)
    assert events == []
