"""The tool-call pipeline, stage by stage, through a real session: every refusal reaches the model as a
tool result, and every action that got as far as policy has exactly one audit record."""

from __future__ import annotations

from pathlib import Path

from seepient.protocol import ApprovalDecision, PermissionRequest, ToolResult
from tests.runtime.conftest import ProbeTool, ScriptedApprover, audit_lines


def _results(events):
    return [e for e in events if isinstance(e, ToolResult)]


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_unknown_tool_and_bad_arguments_go_back_to_the_model(make_session):
    session, events = make_session(
        [_call("no_such_tool"), _call("read_file", path=3, bogus=True), _call("read_file"), {"text": "ok"}]
    )
    outcome = await session.run("x")
    assert outcome.reason == "final"
    unknown, wrong, missing = _results(events)
    assert unknown.status == "error" and "Available tools" in unknown.output and "read_file" in unknown.output
    assert wrong.status == "error" and "bogus" in wrong.output and "path" in wrong.output
    assert missing.status == "error" and "path" in missing.output
    assert audit_lines(session) == []  # nothing was prepared, nothing ran


async def test_path_denied_during_preparation_is_audited_as_a_refused_call(make_session):
    session, events = make_session([_call("read_file", path="/etc/shadow"), {"text": "ok"}])
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied"
    (line,) = audit_lines(session)
    assert line["type"] == "call_refused" and line["outcome"]["status"] == "denied"
    assert line["call"]["arguments"] == {"path": "/etc/shadow"}


async def test_policy_denial_is_audited_and_explained(make_session):
    session, events = make_session(
        [_call("shell", command="cat ~/.ssh/id_rsa"), {"text": "ok"}], auto_approve=True
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "Denied by policy" in result.output
    (line,) = audit_lines(session)
    assert line["outcome"]["status"] == "denied" and line["verdict"]["decision"] == "deny"
    assert line["action"]["digest"] == result.digest


async def test_rejection_feedback_reaches_the_model_and_nothing_runs(make_session):
    person = ScriptedApprover((ApprovalDecision.REJECT, "write tests first"))
    session, events = make_session(
        [_call("write_file", path="new.py", content="x = 1\n"), {"text": "ok"}], approver=person
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "rejected" and "write tests first" in result.output
    assert not (session.workspace / "new.py").exists()
    assert any(isinstance(e, PermissionRequest) for e in events)
    assert person.asked[0].action.digest == result.digest
    assert audit_lines(session)[0]["outcome"]["status"] == "rejected"


async def test_approved_action_runs_and_is_audited_with_its_approval(make_session):
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [_call("write_file", path="new.py", content="x = 1\n"), {"text": "ok"}], approver=person
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "ok"
    assert (session.workspace / "new.py").read_text() == "x = 1\n"
    (line,) = audit_lines(session)
    assert line["approval"]["decision"] == "approve_once" and line["approval"]["digest"] == result.digest
    assert line["outcome"]["status"] == "ok" and len(line["outcome"]["output_sha256"]) == 64


async def test_read_only_inside_workspace_never_asks(make_session, tmp_path: Path):
    person = ScriptedApprover()
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}], approver=person)
    await session.run("x")
    assert person.asked == [] and _results(events)[0].status == "ok"
    assert len(audit_lines(session)) == 1


async def test_a_crashing_tool_is_an_error_result_not_a_crash(make_session):
    session, events = make_session(
        [_call("probe", label="a"), {"text": "still here"}], extra_tools=[ProbeTool(boom=True)]
    )
    outcome = await session.run("x")
    assert outcome.reason == "final" and outcome.text == "still here"
    (result,) = _results(events)
    assert result.status == "error" and "probe exploded" in result.output
    assert audit_lines(session)[0]["outcome"]["status"] == "error"


async def test_results_are_cut_to_the_tool_limit_keeping_head_and_tail(make_session):
    tool = ProbeTool(output="HEAD\n" + "middle line\n" * 5000 + "TAIL")
    tool.max_result_chars = 2000  # type: ignore[misc]
    session, events = make_session([_call("probe", label="a"), {"text": "ok"}], extra_tools=[tool])
    await session.run("x")
    (result,) = _results(events)
    assert len(result.output) <= 2000
    assert result.output.startswith("HEAD") and result.output.endswith("TAIL") and "cut" in result.output


async def test_pre_hook_can_block(make_session):
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}])
    pipeline = (
        session._loop._pipeline
    )  # the hook stage exists; configuring hooks arrives with the hooks issue

    async def block(call):
        return "no globbing on Sundays"

    pipeline._d.pre_hooks.append(block)
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "Sundays" in result.output
