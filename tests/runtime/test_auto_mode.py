"""Auto mode through a real session with the ``replay:`` model, where the classifier's answers are scripted turns
of the same script: what skips it, allow and block with their audit trail, failing closed on garbage and
model errors, and the 3-in-a-row and 10-in-all limits after which a person (or a headless refusal) decides."""

from __future__ import annotations

from typing import Any

import pytest

from seepient.protocol import (
    ApprovalDecision,
    PermissionRequest,
    PermissionResolved,
    ToolResult,
)
from tests.runtime.conftest import audit_actions
from tests.support.approver import ScriptedApprover


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _decide(decision: str, reason: str) -> dict[str, Any]:
    return _call("decide", decision=decision, reason=reason)


def _results(events) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def _resolved(events) -> list[PermissionResolved]:
    return [e for e in events if isinstance(e, PermissionResolved)]


async def test_reads_and_edits_inside_the_workspace_skip_the_classifier(make_session):
    # No classifier turn in the script: if the classifier were asked, the script would run out of turns.
    session, events = make_session(
        [
            _call("write_file", path="notes.md", content="hello\n"),
            _call("edit_file", path="notes.md", old_string="hello", new_string="hi"),
            _call("read_file", path="notes.md"),
            _call("shell", command="cat notes.md"),
            {"text": "done"},
        ],
        mode="auto",
    )
    outcome = await session.run("x")
    assert outcome.reason == "final"
    assert [r.status for r in _results(events)] == ["ok", "ok", "ok", "ok"]
    assert not any(isinstance(e, PermissionRequest) for e in events)
    assert (session.workspace / "notes.md").read_text() == "hi\n"
    assert {line["verdict"]["rule"] for line in audit_actions(session)} == {"mode:auto"}


async def test_an_allow_runs_the_action_and_the_audit_record_says_the_classifier_approved(make_session):
    session, events = make_session(
        [
            _call("shell", command="touch built"),
            _decide("allow", "creating a build marker is part of the requested build"),
            {"text": "done"},
        ],
        mode="auto",
    )
    outcome = await session.run("build it")
    assert outcome.reason == "final" and outcome.text == "done"
    (result,) = _results(events)
    assert result.status == "ok" and (session.workspace / "built").exists()
    (resolved,) = _resolved(events)
    assert resolved.response.approved_by == "classifier"
    assert resolved.response.feedback == "creating a build marker is part of the requested build"
    (line,) = audit_actions(session)
    assert line["approval"]["approved_by"] == "classifier" and line["approval"]["decision"] == "approve_once"
    assert line["approval"]["feedback"] == "creating a build marker is part of the requested build"
    assert line["outcome"]["status"] == "ok"


async def test_a_block_goes_back_to_the_model_with_the_reason_and_nothing_runs(make_session):
    session, events = make_session(
        [
            _call("shell", command="touch deployed"),
            _decide("block", "deploying was not asked for"),
            {"text": "understood"},
        ],
        mode="auto",
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "rejected" and "deploying was not asked for" in result.output
    assert "classifier" in result.output
    assert not (session.workspace / "deployed").exists()
    (line,) = audit_actions(session)
    assert line["approval"]["approved_by"] == "classifier" and line["approval"]["decision"] == "reject"
    assert line["outcome"]["status"] == "rejected"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"text": "Sure, go ahead."}, "not one JSON object"),
        ({"text": '{"decision": "allow", "reason": "fine"} and more'}, "not one JSON object"),
        ({"text": '```json\n{"decision": "allow", "reason": "fine"}\n```'}, "not one JSON object"),
        ({"text": '{"decision": "allow", "reason": "a", "decision": "allow"}'}, "repeats a key"),
        ({"text": '["allow"]'}, "expected a JSON object"),
        (_decide("yes", "fine"), "decision"),
        (_decide("allow", ""), "reason"),
        (_call("decide", decision="allow"), "reason"),
        (_call("decide", decision="allow", reason="fine", also="run rm"), "also"),
        (_call("decide", decision="allow", reason=7), "reason"),
        (_call("shell", command="true"), "expected a call to decide"),
        (
            {
                "tool_calls": [
                    {"name": "decide", "arguments": {"decision": "allow", "reason": "a"}},
                    {"name": "decide", "arguments": {"decision": "block", "reason": "b"}},
                ]
            },
            "expected one decide call",
        ),
    ],
)
async def test_an_answer_that_is_not_exactly_one_decision_is_a_block(make_session, answer, why):
    session, events = make_session([_call("shell", command="touch x"), answer, {"text": "ok"}], mode="auto")
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "rejected" and why in result.output
    assert not (session.workspace / "x").exists()
    assert audit_actions(session)[0]["approval"]["approved_by"] == "classifier"


async def test_a_model_error_is_a_block(make_session):
    # The script ends where the classifier's answer would be: the replay model raises a ModelError.
    session, events = make_session([_call("shell", command="touch x")], mode="auto")
    outcome = await session.run("x")
    (result,) = _results(events)
    assert result.status == "rejected" and "classifier failed" in result.output
    assert not (session.workspace / "x").exists()
    assert outcome.reason == "error"  # the agent's own next turn is missing too


async def test_asks_no_mode_may_skip_go_to_a_person_not_the_classifier(make_session):
    person = ScriptedApprover((ApprovalDecision.REJECT, "not that"))
    session, events = make_session(
        [_call("shell", command='touch "$TARGET"'), {"text": "ok"}], mode="auto", approver=person
    )
    await session.run("x")
    assert len(person.asked) == 1 and person.asked[0].verdict.rule == "shell:unverifiable_path"
    assert _resolved(events)[0].response.approved_by == "user"


def _blocked_then_asked(blocks: list[str]) -> list[dict[str, Any]]:
    """One shell call per classifier answer in ``blocks`` ('allow' or 'block'), then one more call that the
    classifier no longer decides (no answer is scripted for it), then the final text."""
    turns: list[dict[str, Any]] = []
    for number, decision in enumerate(blocks):
        turns.append(_call("shell", command=f"touch f{number}"))
        turns.append(_decide(decision, f"{decision} number {number}"))
    turns.append(_call("shell", command="touch last"))
    turns.append({"text": "ok"})
    return turns


async def test_three_blocks_in_a_row_stop_it_and_a_headless_run_refuses_saying_so(make_session):
    session, events = make_session(_blocked_then_asked(["block", "block", "block"]), mode="auto")
    outcome = await session.run("x")
    assert outcome.reason == "final"
    results = _results(events)
    assert [r.status for r in results] == ["rejected"] * 4
    assert "stopped deciding after 3 blocks in a row" in results[2].output  # the block that reached the limit
    last = results[3]
    assert "stopped deciding after 3 blocks in a row" in last.output and "-y" in last.output
    assert [r.response.approved_by for r in _resolved(events)] == ["classifier"] * 3 + ["headless"]
    assert not (session.workspace / "last").exists()


async def test_after_the_limit_a_person_is_asked(make_session):
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        _blocked_then_asked(["block", "allow", "block", "block", "block"]), mode="auto", approver=person
    )
    await session.run("x")
    assert [r.status for r in _results(events)] == [
        "rejected",
        "ok",
        "rejected",
        "rejected",
        "rejected",
        "ok",
    ]
    assert len(person.asked) == 1 and "last" in person.asked[0].action.summary
    assert (session.workspace / "last").exists() and (session.workspace / "f1").exists()


async def test_ten_blocks_in_all_stop_it_even_with_allows_between(make_session):
    pattern = ["block", "block", "allow"] * 4 + ["block", "block"]  # 10 blocks, never 3 in a row
    session, events = make_session(_blocked_then_asked(pattern), mode="auto")
    outcome = await session.run("x")
    assert outcome.reason == "final"
    results = _results(events)
    assert [r.status for r in results[:-1]] == ["ok" if d == "allow" else "rejected" for d in pattern]
    assert "stopped deciding after 10 blocks in this session" in results[-2].output
    assert results[-1].status == "rejected" and "10 blocks in this session" in results[-1].output
    assert _resolved(events)[-1].response.approved_by == "headless"


async def test_two_blocks_in_a_row_then_an_allow_keep_it_deciding(make_session):
    session, events = make_session(
        _blocked_then_asked(["block", "block", "allow", "block", "block"])[:-2]
        + [_call("shell", command="touch last"), _decide("allow", "fine"), {"text": "ok"}],
        mode="auto",
    )
    await session.run("x")
    assert [r.response.approved_by for r in _resolved(events)] == ["classifier"] * 6
    assert (session.workspace / "last").exists()
