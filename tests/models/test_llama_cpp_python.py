"""The OpenAI Chat adapter and the router against the exchanges recorded with a real llama-cpp-python server
(``shared/corpora/sse/llama_cpp_python``), replayed by the fake provider, which also plays that server's
request validation (``llama_cpp_python_check``): every recording either works or fails as what it is."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from seepient.config.settings import Settings
from seepient.models.openai_chat import OpenAIChatModel
from seepient.models.router import ModelRouter
from seepient.protocol import Message, ModelRequest, TextChunk, ToolCall, ToolSpec
from tests.models.helpers import collect, collect_until_error, only_completion, streamed_text, track
from tests.support.clock import FakeClock
from tests.support.sse_server import (
    LLAMA_CPP_PYTHON,
    RecordedRequest,
    Reply,
    SSEReplayServer,
    corpus_dir,
    llama_cpp_python_check,
)

SHELL = ToolSpec(
    name="shell",
    description="Run a bash command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
ASK = ModelRequest(model="smollm", messages=(Message.user("List the files in this folder."),), tools=(SHELL,))
CONTEXT_MESSAGE = (
    "This model's maximum context length is 256 tokens. However, you requested 308 tokens (308 in the "
    "messages, 0 in the completion). Please reduce the length of the messages or completion."
)


def recording(name: str) -> str:
    return f"{LLAMA_CPP_PYTHON}/{name}"


@pytest.fixture
def llama() -> Iterator[SSEReplayServer]:
    """The fake provider answering as llama-cpp-python does, validation included."""
    with SSEReplayServer(check=llama_cpp_python_check) as server:
        yield server


def make_model(server: SSEReplayServer) -> OpenAIChatModel:
    return track(OpenAIChatModel("smollm", base_url=server.base_url, api_key=None))


def follow_up(call: ToolCall) -> ModelRequest:
    """The request after a tool call: the assistant message carrying the call (no text), then its result."""
    return ASK.model_copy(
        update={
            "messages": (
                *ASK.messages,
                Message.assistant("", tool_calls=(call,)),
                Message.tool_result(call, "notes.txt"),
            )
        }
    )


async def test_ping_comments_before_the_first_event_are_ignored(llama):
    llama.queue(Reply.recorded(recording("stream_with_ping_comments.txt")))
    completion = only_completion(await collect(make_model(llama), ASK))
    (call,) = completion.message.tool_calls
    assert call.id == "call__0_shell_cmpl-b8c8310c-c03d-485b-85f8-e4d213c8fa57" and call.name == "shell"
    # The tiny model wrote broken arguments: flagged for the model to see, not a stream error.
    assert call.raw_arguments == '{ "command": "shell' and "not valid JSON" in (call.arguments_error or "")


async def test_a_forced_call_that_repeats_its_id_and_name_in_every_chunk_is_one_call(llama):
    llama.queue(Reply.transcript(recording("tools_stream_forced.sse")))
    completion = only_completion(await collect(make_model(llama), ASK))
    assert completion.finish_reason == "tool_calls"
    (call,) = completion.message.tool_calls
    assert (call.name, call.arguments, call.arguments_error) == ("shell", {"command": "$1"}, None)


async def test_the_message_carrying_tool_calls_is_sent_with_empty_text_and_accepted(llama):
    call = ToolCall(id="call_1", name="shell", arguments={"command": "ls"})
    llama.queue(Reply.transcript(recording("text_stream.sse")))
    completion = only_completion(await collect(make_model(llama), follow_up(call)))
    assert completion.message.content == "Hey there, hello."
    sent = llama.last_request.json()["messages"][1]
    assert sent["role"] == "assistant" and sent["content"] == ""
    assert sent["tool_calls"][0]["function"] == {"name": "shell", "arguments": '{"command": "ls"}'}


def test_the_fake_server_rejects_null_content_with_the_recorded_answer():
    """The check the tests above rely on: the request Seepient used to send gets the recorded 500."""
    sent = (corpus_dir() / recording("followup_request_content_null.json")).read_bytes()
    reply = llama_cpp_python_check(_chat_request(sent))
    assert reply is not None and reply.status == 500
    assert b"Input should be a valid string" in (reply.body or b"")
    fixed = json.loads(sent)
    fixed["messages"][2]["content"] = ""
    assert llama_cpp_python_check(_chat_request(json.dumps(fixed).encode())) is None


async def test_a_validation_error_sent_as_http_500_is_not_retried(llama):
    llama.queue(Reply.recorded(recording("followup_response_500_content_null.txt")), Reply.synthesized("no"))
    router = track(_router(llama))
    _, error = await collect_until_error(router.route(), ASK)
    assert len(llama.requests) == 1
    assert not error.retryable and error.status == 500
    assert "rejected the request as invalid" in str(error) and "Input should be a valid string" in str(error)


@pytest.mark.parametrize("status", [409, 413, 422])
async def test_client_errors_other_than_timeout_and_rate_limit_are_not_retried(llama, status):
    llama.queue(Reply.error(status, f"refused with {status}"), Reply.synthesized("no"))
    _, error = await collect_until_error(track(_router(llama)).route(), ASK)
    assert len(llama.requests) == 1 and not error.retryable and error.status == status


async def test_a_real_server_error_is_still_retried(llama):
    llama.queue(Reply.error(500, "CUDA error: out of memory", type="internal_server_error"))
    llama.queue(Reply.synthesized("recovered"))
    assert streamed_text(await collect(track(_router(llama)).route(), ASK)) == "recovered"
    assert len(llama.requests) == 2


async def test_an_empty_stream_after_200_is_reported_as_such_and_not_retried(llama):
    # The recorded answer to tools with tool_choice "auto": 200, text/event-stream, then 0 bytes.
    llama.queue(Reply.transcript(recording("tools_stream_no_tool_choice.sse")), Reply.synthesized("no"))
    events, error = await collect_until_error(track(_router(llama)).route(), ASK)
    assert events == [] and len(llama.requests) == 1 and not error.retryable
    message = str(error)
    assert "answered HTTP 200 and then closed the stream without sending a single event" in message
    assert "context window" in message and "docs/local-models.md" in message


async def test_a_prompt_longer_than_the_context_is_named_as_such(llama):
    request = json.loads((corpus_dir() / recording("context_too_long_request.json")).read_text())
    too_long = ModelRequest(model="smollm", messages=(Message.user(request["messages"][0]["content"]),))
    llama.queue(
        Reply.error(400, CONTEXT_MESSAGE, type="invalid_request_error", code="context_length_exceeded"),
        Reply.synthesized("no"),
    )
    _, error = await collect_until_error(track(_router(llama)).route(), too_long)
    assert len(llama.requests) == 1 and not error.retryable
    assert "longer than the model's context window" in str(error) and "context.windowTokens" in str(error)
    assert CONTEXT_MESSAGE in str(error)


async def test_a_context_overflow_inside_the_stream_is_named_as_such(llama):
    llama.queue(Reply.stream({"error": {"message": "Requested tokens (308) exceed context window of 256"}}))
    _, error = await collect_until_error(make_model(llama), ASK)
    assert "longer than the model's context window" in str(error) and not error.retryable


async def test_ignored_tools_give_a_plain_text_answer(llama):
    llama.queue(Reply.transcript(recording("text_stream.sse")))
    events = await collect(make_model(llama), ASK)
    completion = only_completion(events)
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["Hey", " there", ",", " hello", "."]
    assert completion.finish_reason == "stop" and completion.message.tool_calls == ()
    assert "tools" in llama.last_request.json()
    # Asked for with stream_options.include_usage, never sent: unknown, not zero.
    assert llama.last_request.json()["stream_options"] == {"include_usage": True}
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (None, None)


async def test_the_output_limit_is_reported_as_length(llama):
    llama.queue(Reply.recorded(recording("stream_finish_length.txt")))
    completion = only_completion(await collect(make_model(llama), ASK))
    assert completion.finish_reason == "length" and completion.message.content == "The sun dips"


def _router(server: SSEReplayServer) -> ModelRouter:
    settings = Settings.model_validate(
        {
            "models": {
                "providers": {"llama": {"type": "openai-chat", "baseUrl": server.base_url}},
                "routes": {"text.standard": {"model": "llama:smollm"}},
                "retry": {"maxAttempts": 4},
            }
        }
    ).models
    return ModelRouter(settings, clock=FakeClock(), rng=random.Random(1), environ={})


def _chat_request(body: bytes) -> RecordedRequest:
    return RecordedRequest("POST", "/v1/chat/completions", {}, body)
