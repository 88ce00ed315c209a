"""History compaction: pruning first, then a summary written by the replay model, and the invariants that
must survive both (pairing, the latest request word for word, unanswered calls, the window)."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from seepient.context.history import (
    PRUNED_MARK,
    SUMMARY_HEADER,
    CompactionPolicy,
    compact_history,
    is_summary,
    model_summariser,
    pairing_problems,
    plain_digest,
)
from seepient.context.tokens import TokenEstimator
from seepient.models.scripted import ScriptedModel
from seepient.protocol import Message, ToolCall

SYSTEM = "You are a test agent."
_ids = itertools.count()


def _turn(prompt: str, outputs: list[int], final: str = "done", *, text_chars: int = 0) -> list[Message]:
    """A user prompt, one tool step per entry of ``outputs`` (that many characters of output), a final answer."""
    messages = [Message.user(prompt)]
    for size in outputs:
        call = ToolCall(id=f"call_{next(_ids)}", name="read_file", arguments={"path": "big.txt"})
        messages.append(Message.assistant("x" * text_chars, tool_calls=(call,)))
        messages.append(Message.tool_result(call, "o" * size))
    messages.append(Message.assistant(final + "y" * text_chars))
    return messages


def _scripted(*texts: str) -> ScriptedModel:
    """A summariser that answers with ``texts`` in turn and keeps every request it was sent."""
    return ScriptedModel([{"text": text} for text in texts])


def _summariser(model: ScriptedModel):  # type: ignore[no-untyped-def]
    return model_summariser(model, "summary-model", max_tokens=500, transcript_chars=20_000)


POLICY = CompactionPolicy(window_tokens=8_000, compact_at=0.8, keep_recent_turns=2, summary_max_tokens=500)


async def test_under_the_threshold_nothing_happens():
    model = _scripted("never used")
    history = _turn("hello", [100])
    result = await compact_history(
        SYSTEM, history, (), policy=POLICY, estimator=TokenEstimator(), summarise=_summariser(model)
    )
    assert result is None and model.requests == []


async def test_old_tool_outputs_are_pruned_first_and_no_summary_is_needed():
    model = _scripted("never used")
    history = _turn("read the logs", [12_000, 12_000]) + _turn("and now the code", [300, 300, 300])
    estimator = TokenEstimator()
    result = await compact_history(
        SYSTEM, history, (), policy=POLICY, estimator=estimator, summarise=_summariser(model)
    )
    assert result is not None and model.requests == []
    assert (result.pruned_tool_outputs, result.summarised_messages, result.summary_model) == (1, 0, None)
    assert result.tokens_before > POLICY.trigger_tokens >= result.tokens_after
    assert len(result.messages) == len(history)
    assert [m.role for m in result.messages] == [m.role for m in history]
    # Oldest first, and only as far as needed to get back under the target.
    assert result.messages[2].content.startswith(PRUNED_MARK)
    assert "12,000 characters of output from read_file" in result.messages[2].content
    assert result.messages[2].tool_call_id == history[2].tool_call_id
    assert result.messages[4] is history[4]
    # The newest steps keep their outputs whole; ids still pair up.
    assert result.messages[-2].content == "o" * 300
    assert pairing_problems(result.messages, allow_pending_tail=False) == []


async def test_a_history_crossing_the_threshold_is_summarised_by_the_replay_model():
    model = _scripted("SUMMARY: the user wants calc.py fixed; add() was wrong and is now fixed.")
    history = (
        _turn("first: fix calc.py", [200], text_chars=4_000)
        + _turn("second: add tests", [200], text_chars=4_000)
        + _turn("third: document it", [200], text_chars=4_000)
        + _turn("fourth: and the changelog", [200], text_chars=3_000)
        + [Message.user("fifth: ship it")]
    )
    estimator = TokenEstimator()
    before_tail = history[-9:]
    result = await compact_history(
        SYSTEM,
        history,
        (),
        policy=POLICY,
        estimator=estimator,
        summarise=_summariser(model),
        summary_model="summary-model",
    )
    assert result is not None
    assert result.summary_model == "summary-model" and result.summary_error is None
    assert result.tokens_before > POLICY.trigger_tokens and result.tokens_after <= POLICY.target_tokens
    first = result.messages[0]
    assert is_summary(first) and first.content.startswith(SUMMARY_HEADER)
    assert "SUMMARY: the user wants calc.py fixed" in first.content
    # The summary call saw the older requests, as text, through the replay model.
    (request,) = model.requests
    assert request.messages[0].role == "system" and "Summarise" in request.messages[1].content
    assert "first: fix calc.py" in request.messages[1].content
    assert "fifth: ship it" not in request.messages[1].content
    assert request.max_output_tokens == 500
    # The latest turns stay word for word (the same message objects), the latest request last.
    kept = result.messages[1:]
    assert kept == before_tail[-len(kept) :]
    assert kept[-1].content == "fifth: ship it"
    assert len(kept) >= 5
    assert pairing_problems(result.messages, allow_pending_tail=False) == []
    assert result.summarised_messages == len(history) - len(kept)


async def test_one_huge_turn_is_cut_inside_it_and_its_request_stays_first():
    model = _scripted("SUMMARY of the steps so far")
    policy = CompactionPolicy(window_tokens=8_000, keep_recent_tool_steps=2, summary_max_tokens=500)
    history = _turn("refactor everything", [600] * 30, text_chars=1_500)[
        :-1
    ]  # still working: no final answer
    result = await compact_history(
        SYSTEM, history, (), policy=policy, estimator=TokenEstimator(), summarise=_summariser(model)
    )
    assert result is not None and result.summarised_messages > 0
    assert result.messages[0] == history[0]
    assert is_summary(result.messages[1]) and "SUMMARY of the steps so far" in result.messages[1].content
    assert result.messages[2].role == "assistant"
    assert result.messages[-2:] == history[-2:]
    assert pairing_problems(result.messages, allow_pending_tail=False) == []
    assert result.tokens_after <= policy.trigger_tokens


async def test_an_unanswered_tool_call_is_never_dropped():
    model = _scripted("SUMMARY")
    waiting = ToolCall(id="call_waiting", name="shell", arguments={"command": "make"})
    history = (
        _turn("one", [200], text_chars=6_000)
        + _turn("two", [200], text_chars=6_000)
        + _turn("three", [200], text_chars=6_000)
        + [Message.user("four"), Message.assistant("running make", tool_calls=(waiting,))]
    )
    result = await compact_history(
        SYSTEM, history, (), policy=POLICY, estimator=TokenEstimator(), summarise=_summariser(model)
    )
    assert result is not None and result.summarised_messages > 0
    assert result.messages[-1].tool_calls == (waiting,)
    assert pairing_problems(result.messages) == []


async def test_a_failed_summary_call_leaves_a_plain_digest_and_says_why():
    model = _scripted("only one summary in this script")
    history = _turn("first request", [200], text_chars=8_000) + _turn("second", [200], text_chars=8_000)
    history += _turn("third", [100], text_chars=8_000) + [Message.user("fourth")]
    estimator = TokenEstimator()
    first = await compact_history(
        SYSTEM,
        history,
        (),
        policy=POLICY,
        estimator=estimator,
        summarise=_summariser(model),
        summary_model="m",
    )
    assert first is not None and first.summary_error is None
    grown = first.messages + _turn("fifth", [100], text_chars=9_000) + _turn("sixth", [100], text_chars=9_000)
    grown += [Message.user("seventh")]
    second = await compact_history(
        SYSTEM, grown, (), policy=POLICY, estimator=estimator, summarise=_summariser(model), summary_model="m"
    )
    assert second is not None
    assert second.summary_error is not None and "summary call failed" in second.summary_error
    assert second.summary_model is None
    digest = second.messages[0].content
    assert "No model summary was available" in digest and "(an earlier summary)" in digest
    assert "only one summary in this script" in digest  # the earlier summary is carried forward
    assert second.messages[-1].content == "seventh"
    assert pairing_problems(second.messages, allow_pending_tail=False) == []
    fields = second.event_fields()
    assert fields["reason"] == "threshold" and fields["summary_error"] == second.summary_error


async def test_forced_compaction_summarises_below_the_threshold():
    model = _scripted("FORCED SUMMARY")
    history = _turn("a", [50]) + _turn("b", [50]) + _turn("c", [50]) + [Message.user("d")]
    result = await compact_history(
        SYSTEM,
        history,
        (),
        policy=POLICY,
        estimator=TokenEstimator(),
        summarise=_summariser(model),
        force=True,
    )
    assert result is not None and result.reason == "forced"
    assert "FORCED SUMMARY" in result.messages[0].content
    assert result.messages[-1].content == "d"
    assert result.messages[1:] == history[-len(result.messages) + 1 :]


async def test_outputs_too_big_for_the_window_on_their_own_are_cut_in_the_middle(tmp_path):
    history = [Message.user("read both")] + _turn("x", [40_000, 40_000])[1:-1]
    result = await compact_history(
        SYSTEM, history, (), policy=POLICY, estimator=TokenEstimator(), summarise=None
    )
    assert result is not None
    assert result.tokens_after <= POLICY.window_tokens * 0.95
    cut = [m for m in result.messages if "cut from the middle" in m.content]
    assert cut and all(m.content.startswith("ooo") and m.content.endswith("ooo") for m in cut)
    assert pairing_problems(result.messages, allow_pending_tail=False) == []


def test_plain_digest_without_a_model():
    history = _turn("please fix the parser", [10], final="Fixed the parser.")
    digest = plain_digest(history)
    assert "please fix the parser" in digest and "Fixed the parser." in digest and "read_file ×1" in digest


def test_pairing_problems_catch_what_providers_reject():
    call = ToolCall(id="c1", name="read_file")
    assert pairing_problems([Message.user("x"), Message.tool_result(call, "orphan")]) != []
    broken = [Message.assistant("", tool_calls=(call,)), Message.user("next")]
    assert pairing_problems(broken) != []
    assert pairing_problems([Message.assistant("", tool_calls=(call,))]) == []
    assert pairing_problems([Message.assistant("", tool_calls=(call,))], allow_pending_tail=False) != []


# -- invariants over many shapes of history --------------------------------------------------------------

_turn_shape = st.tuples(
    st.lists(st.integers(min_value=0, max_value=9_000), max_size=6),  # tool output sizes
    st.integers(min_value=0, max_value=5_000),  # assistant text size
    st.lists(st.integers(min_value=1, max_value=3), max_size=6),  # calls per step (parallel calls)
)


def _history(shapes: list[tuple[list[int], int, list[int]]], pending: bool) -> list[Message]:
    messages: list[Message] = []
    for number, (outputs, text, parallel) in enumerate(shapes):
        messages.append(Message.user(f"request {number}"))
        for position, size in enumerate(outputs):
            width = parallel[position] if position < len(parallel) else 1
            calls = tuple(ToolCall(id=f"c{number}_{position}_{k}", name="grep") for k in range(width))
            messages.append(Message.assistant("t" * (text // 4), tool_calls=calls))
            messages.extend(Message.tool_result(call, "r" * (size // width)) for call in calls)
        messages.append(Message.assistant("a" * text))
    if pending:
        waiting = ToolCall(id="waiting", name="shell")
        messages.append(Message.assistant("", tool_calls=(waiting,)))
    return messages


_OUTCOMES: Counter[str] = Counter()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=st.lists(_turn_shape, min_size=1, max_size=8),
    pending=st.booleans(),
    window=st.sampled_from([4_000, 8_000, 16_000]),
    keep=st.integers(min_value=1, max_value=3),
    force=st.booleans(),
)
@example(  # old outputs alone are too big: pruning is enough
    shapes=[([9_000] * 4, 0, []), ([100], 0, [])], pending=False, window=8_000, keep=2, force=False
)
@example(  # long answers: only a summary helps
    shapes=[([100], 5_000, [])] * 6, pending=True, window=8_000, keep=2, force=False
)
def test_compaction_invariants_hold_for_any_history(shapes, pending, window, keep, force):
    history = _history(shapes, pending)
    policy = CompactionPolicy(window_tokens=window, keep_recent_turns=keep, summary_max_tokens=300)
    seen: list[int] = []

    async def summarise(messages):  # type: ignore[no-untyped-def]
        assert messages, "a summary of nothing was asked for"
        assert pairing_problems(messages, allow_pending_tail=False) == []
        seen.append(len(messages))
        return "S"

    result = asyncio.run(
        compact_history(
            SYSTEM, history, (), policy=policy, estimator=TokenEstimator(), summarise=summarise, force=force
        )
    )
    if result is None:
        assert not force or len(history) < 3
        return
    _OUTCOMES.update(["summarised" if seen else "pruned"])
    messages = result.messages
    assert pairing_problems(messages) == []
    latest = max(i for i, m in enumerate(history) if m.role == "user")
    assert history[latest] in messages, "the latest request was dropped"
    if pending:
        assert messages[-1].tool_calls and messages[-1].tool_calls[0].id == "waiting"
    # Everything from the first kept assistant step on is the original tail, only tool outputs shortened.
    tail = [m for m in messages if not is_summary(m)]
    originals = {id(m) for m in history}
    for message in tail:
        if id(message) not in originals:
            assert message.role == "tool", "only tool outputs may be rewritten"
    call_ids = [c.id for m in messages for c in m.tool_calls]
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    assert set(call_ids) - answered <= {"waiting"}
    assert result.tokens_after <= result.tokens_before or force


def test_the_property_test_exercised_both_stages():
    """Guards the test above against generating only histories that never need compacting."""
    if not _OUTCOMES:
        test_compaction_invariants_hold_for_any_history()
    assert _OUTCOMES["summarised"] > 0 and _OUTCOMES["pruned"] > 0, _OUTCOMES
