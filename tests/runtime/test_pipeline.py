"""The tool-call pipeline, stage by stage, through a real session: every refusal reaches the model as a
tool result, and every action that got as far as policy has exactly one audit record."""

from __future__ import annotations

import json
from pathlib import Path

from seepient.config import SeepientPaths
from seepient.policy.checks.findings import RULE_UNVERIFIABLE
from seepient.protocol import (
    ApprovalDecision,
    PermissionRequest,
    ToolResult,
)
from tests.runtime.conftest import ProbeTool, audit_actions
from tests.support.approver import Answer, ScriptedApprover


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
    assert audit_actions(session) == []  # nothing was prepared, nothing ran


async def test_path_denied_during_preparation_is_audited_as_a_refused_call(make_session):
    session, events = make_session([_call("read_file", path="/etc/shadow"), {"text": "ok"}])
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied"
    (line,) = audit_actions(session)
    assert line["type"] == "call_refused" and line["outcome"]["status"] == "denied"
    assert line["call"]["arguments"] == {"path": "/etc/shadow"}


async def test_policy_denial_is_audited_and_explained(make_session):
    session, events = make_session(
        [_call("shell", command="cat ~/.ssh/id_rsa"), {"text": "ok"}], auto_approve=True
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "denied" and "Denied by policy" in result.output
    (line,) = audit_actions(session)
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
    assert audit_actions(session)[0]["outcome"]["status"] == "rejected"


async def test_approved_action_runs_and_is_audited_with_its_approval(make_session):
    person = ScriptedApprover((ApprovalDecision.APPROVE_ONCE, None))
    session, events = make_session(
        [_call("write_file", path="new.py", content="x = 1\n"), {"text": "ok"}], approver=person
    )
    await session.run("x")
    (result,) = _results(events)
    assert result.status == "ok"
    assert (session.workspace / "new.py").read_text() == "x = 1\n"
    (line,) = audit_actions(session)
    assert line["approval"]["decision"] == "approve_once" and line["approval"]["digest"] == result.digest
    assert line["outcome"]["status"] == "ok" and len(line["outcome"]["output_sha256"]) == 64


async def test_read_only_inside_workspace_never_asks(make_session, tmp_path: Path):
    person = ScriptedApprover()
    session, events = make_session([_call("glob", pattern="*"), {"text": "ok"}], approver=person)
    await session.run("x")
    assert person.asked == [] and _results(events)[0].status == "ok"
    assert len(audit_actions(session)) == 1


async def test_a_crashing_tool_is_an_error_result_not_a_crash(make_session):
    session, events = make_session(
        [_call("probe", label="a"), {"text": "still here"}], extra_tools=[ProbeTool(boom=True)]
    )
    outcome = await session.run("x")
    assert outcome.reason == "final" and outcome.text == "still here"
    (result,) = _results(events)
    assert result.status == "error" and "probe exploded" in result.output
    assert audit_actions(session)[0]["outcome"]["status"] == "error"


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


def _project_settings(workspace: Path, **permissions) -> Path:
    path = workspace / ".seepient" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))
    return path


async def test_a_prefix_grant_answers_asks_but_never_reaches_a_deny(make_session, tmp_path: Path):
    _project_settings(tmp_path / "ws", deny=["Edit(locked/**)"])
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="prefix"), ApprovalDecision.REJECT
    )
    session, events = make_session(
        [
            _call("shell", command="touch a"),
            _call("shell", command="touch locked/b"),
            _call("shell", command="touch ~/.bashrc"),
            _call("shell", command="touch c"),
            _call("shell", command="touch d && rm -rf a"),
            {"text": "ok"},
        ],
        approver=person,
    )
    await session.run("x")
    first, locked, bashrc, later, compound = _results(events)
    assert first.status == "ok" and person.asked[0].scopes[1].value == "touch:*"
    assert locked.status == "denied" and "deny rule" in locked.output
    assert bashrc.status == "denied"
    assert later.status == "ok"
    assert compound.status == "rejected" and len(person.asked) == 2  # only the compound line was asked
    assert (session.workspace / "c").exists() and (session.workspace / "a").exists()
    approvals = [line.get("approval") for line in audit_actions(session)]
    assert [a and a["approved_by"] for a in approvals] == ["user", None, None, "grant:session", "user"]


async def test_an_ask_no_mode_may_skip_is_approved_once_however_it_is_answered(make_session):
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="exact"), ApprovalDecision.APPROVE_ONCE
    )
    call = _call("shell", command='touch "$TARGET"')
    session, events = make_session([call, call, {"text": "ok"}], approver=person)
    await session.run("x")
    assert len(person.asked) == 2  # asked again: the first "session" answer counted once only
    assert all(request.scopes == () and request.project_rule is None for request in person.asked)
    assert person.asked[0].verdict.rule == RULE_UNVERIFIABLE
    requests = [e for e in events if isinstance(e, PermissionRequest)]
    assert [r.request.scopes for r in requests] == [(), ()]


async def test_approve_always_writes_the_rule_and_the_next_session_does_not_ask(make_session, tmp_path: Path):
    settings = _project_settings(tmp_path / "ws", deny=["Read(.env)"])
    before = settings.read_bytes()
    person = ScriptedApprover(ApprovalDecision.APPROVE_PROJECT)
    session, events = make_session([_call("shell", command="touch one"), {"text": "ok"}], approver=person)
    await session.run("x")
    assert _results(events)[0].status == "ok"
    # The answer is the user's: it goes to the user's rules for this workspace, the repository is untouched.
    assert settings.read_bytes() == before
    rules = SeepientPaths(home=tmp_path / "seepient-home").workspace_rules(session.workspace)
    assert json.loads(rules.read_text()) == {"permissions": {"allow": ["Shell(touch:*)"]}}
    (line,) = audit_actions(session)
    assert line["approval"]["decision"] == "approve_project" and line["approval"]["scope"] == "Shell(touch:*)"

    headless, events = make_session([_call("shell", command="touch two"), {"text": "ok"}])
    await headless.run("x")
    (result,) = _results(events)
    assert result.status == "ok" and (headless.workspace / "two").exists()
    assert not any(isinstance(e, PermissionRequest) for e in events)
    assert audit_actions(headless)[-1]["verdict"]["rule"] == "allow:Shell(touch:*)"


async def test_the_model_cannot_write_the_project_rule_itself(make_session):
    session, events = make_session(
        [
            _call(
                "write_file", path=".seepient/settings.json", content='{"permissions": {"allow": ["Shell"]}}'
            ),
            _call("shell", command="echo '{}' > .seepient/settings.json"),
            {"text": "ok"},
        ],
        auto_approve=True,
    )
    await session.run("x")
    assert [r.status for r in _results(events)] == ["denied", "denied"]
    assert not (session.workspace / ".seepient" / "settings.json").exists()


async def test_an_edit_rule_written_for_a_directory_is_honoured_by_the_next_session(
    make_session, tmp_path: Path
):
    (tmp_path / "ws" / "src").mkdir()
    person = ScriptedApprover(ApprovalDecision.APPROVE_PROJECT)
    session, events = make_session(
        [_call("write_file", path="src/a.py", content="a = 1\n"), {"text": "ok"}], approver=person
    )
    await session.run("x")
    assert person.asked[0].project_rule == "Edit(/src/**)" and _results(events)[0].status == "ok"

    headless, events = make_session(
        [
            _call("write_file", path="src/deep.py", content="b = 2\n"),
            _call("write_file", path="elsewhere.py", content="c = 3\n"),
            {"text": "ok"},
        ]
    )
    await headless.run("x")
    assert [r.status for r in _results(events)] == ["ok", "rejected"]  # the rule covers src/ only
    assert audit_actions(headless)[-2]["verdict"]["rule"] == "allow:Edit(/src/**)"


async def test_an_unpaired_surrogate_in_the_arguments_is_a_clear_error(make_session) -> None:
    """JSON lets a model write "\\ud800"; no command, path or canonical digest can hold it."""
    session, events = make_session(
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "echo \ud800"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a\udfff.txt", "content": "x"}}]},
            {"text": "ok"},
        ]
    )
    await session.run("x")
    results = _results(events)
    assert [r.status for r in results] == ["error", "error"]
    assert all("unpaired UTF-16 surrogate" in r.output for r in results)
    assert audit_actions(session) == []
    assert not list(session.workspace.iterdir()) or not any(
        "a" in p.name for p in session.workspace.iterdir()
    )
