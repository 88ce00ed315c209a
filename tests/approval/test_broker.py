"""The approval broker: digest binding, scoped session grants, the project rule, -y, and headless refusal."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from seepient.approval import HEADLESS_REASON, ApprovalBroker, ScopeFinder
from seepient.policy.checks.findings import RULE_UNPARSED
from seepient.policy.paths import PathGuard
from seepient.protocol import (
    ApprovalDecision,
    ApprovalRequest,
    FileChange,
    PreparedActionDraft,
    ShellCommand,
    Verdict,
)
from tests.support.approver import Answer, ScriptedApprover

MODE_ASK = Verdict.ask("mode:ask-untrusted", "needs a person")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return root


def make_broker(workspace: Path, approver: ScriptedApprover | None, **kwargs) -> ApprovalBroker:
    guard = PathGuard(workspace, seepient_home=workspace.parent / "seepient-home", home=workspace.parent)
    return ApprovalBroker(
        approver,
        scopes=ScopeFinder(guard.workspace, guard, home=guard.home),
        project_settings=guard.workspace / ".seepient" / "settings.json",
        **kwargs,
    )


def _shell(command: str = "make", cwd: str = "/w") -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind="shell",
        payload=ShellCommand(command=command, cwd=cwd),
        read_only=False,
        summary=command,
    )


def _write(path: str) -> PreparedActionDraft:
    change = FileChange(path=path, pre_image_sha256=None, new_content="x\n")
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="write_file",
        kind="file_change",
        payload=change,
        read_only=False,
        summary=path,
    )


def _request(command: str = "make", verdict: Verdict = MODE_ASK, cwd: str = "/w") -> ApprovalRequest:
    return ApprovalRequest(session_id="s", action=_shell(command, cwd), verdict=verdict)


async def test_headless_refuses_at_once_with_reason():
    broker = ApprovalBroker(None)
    assert broker.headless
    verdict = Verdict.ask("ask:Shell(make *)", "make runs the project's build")
    response = await broker.resolve(_request(verdict=verdict))
    assert response.decision is ApprovalDecision.REJECT
    assert (
        response.feedback
        == f"policy asked (ask:Shell(make *)): make runs the project's build; {HEADLESS_REASON}"
    )
    assert response.approved_by == "headless"


async def test_headless_refusal_can_say_why_no_one_else_answered():
    response = await ApprovalBroker(None).resolve(_request(), headless_reason="the classifier gave up")
    assert not response.approved and response.feedback.endswith("; the classifier gave up")
    assert response.feedback.startswith(f"policy asked ({MODE_ASK.rule})")


async def test_yes_flag_approves_and_says_so():
    response = await ApprovalBroker(None, auto_approve=True).resolve(_request())
    assert response.approved and response.approved_by == "flag:-y"


async def test_a_deny_is_refused_even_with_the_yes_flag_and_no_one_is_asked():
    person = ScriptedApprover(ApprovalDecision.APPROVE_ONCE)
    for broker in (ApprovalBroker(None, auto_approve=True), ApprovalBroker(person)):
        response = await broker.resolve(_request(verdict=Verdict.deny("deny:Shell(make)", "no")))
        assert not response.approved
    assert person.asked == []


async def test_session_grant_covers_the_same_digest_only():
    person = ScriptedApprover(ApprovalDecision.APPROVE_SESSION, ApprovalDecision.REJECT)
    broker = ApprovalBroker(person)
    assert (await broker.resolve(_request("make"))).approved
    again = await broker.resolve(_request("make"))
    assert again.approved and again.approved_by == "grant:session"
    assert len(person.asked) == 1
    other = await broker.resolve(_request("make install"))
    assert not other.approved and len(person.asked) == 2


async def test_answer_for_another_digest_is_a_rejection():
    broker = ApprovalBroker(ScriptedApprover(ApprovalDecision.APPROVE_SESSION, digest="f" * 64))
    response = await broker.resolve(_request())
    assert not response.approved and response.approved_by == "broker:digest_mismatch"
    assert not broker.has_session_grant(_request().digest)


async def test_reject_keeps_feedback():
    response = await ApprovalBroker(ScriptedApprover(ApprovalDecision.REJECT, feedback="fb")).resolve(
        _request()
    )
    assert not response.approved and response.feedback == "fb"


async def test_prefix_grant_answers_later_commands_with_that_prefix_only(workspace):
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="prefix"), ApprovalDecision.REJECT
    )
    broker = make_broker(workspace, person)
    request = broker.request_for(_shell("git commit -m x", str(workspace)), MODE_ASK)
    assert [s.kind for s in request.scopes] == ["exact", "prefix"]
    first = await broker.resolve(request)
    assert first.approved and first.scope == "prefix"
    later = await broker.resolve(broker.request_for(_shell("git commit -m 'y z'", str(workspace)), MODE_ASK))
    assert later.approved and later.approved_by == "grant:session"
    compound = await broker.resolve(
        broker.request_for(_shell("git commit -m x && rm -rf build", str(workspace)), MODE_ASK)
    )
    assert not compound.approved and len(person.asked) == 2


async def test_a_grant_never_answers_an_ask_no_mode_may_skip(workspace):
    person = ScriptedApprover(ApprovalDecision.APPROVE_SESSION, ApprovalDecision.APPROVE_SESSION)
    broker = make_broker(workspace, person)
    action = _shell("git commit -m x", str(workspace))
    assert (await broker.resolve(broker.request_for(action, MODE_ASK))).approved
    hard = Verdict.ask(RULE_UNPARSED, "cannot be analysed")
    request = broker.request_for(action, hard)
    assert request.scopes == () and request.project_rule is None
    # The same digest is granted, but this verdict is one that asks every time: the person is asked again,
    # and their "session" answer counts once only.
    response = await broker.resolve(request)
    assert len(person.asked) == 2
    assert response.decision is ApprovalDecision.APPROVE_ONCE and "no session scope" in (
        response.feedback or ""
    )
    assert len(broker.grants) == 1


async def test_an_approver_cannot_pick_a_scope_that_was_not_offered(workspace):
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="directory"), ApprovalDecision.REJECT
    )
    broker = make_broker(workspace, person)
    response = await broker.resolve(broker.request_for(_shell("make", str(workspace)), MODE_ASK))
    assert response.decision is ApprovalDecision.APPROVE_ONCE and broker.grants == ()
    assert not (await broker.resolve(broker.request_for(_shell("make", str(workspace)), MODE_ASK))).approved


async def test_a_request_built_elsewhere_gets_the_brokers_own_offer(workspace):
    person = ScriptedApprover(Answer(ApprovalDecision.APPROVE_SESSION, scope="prefix"))
    broker = make_broker(workspace, person)
    forged = ApprovalRequest(
        session_id="s",
        action=_shell("git commit -m x", str(workspace)),
        verdict=Verdict.ask("shell:unverifiable_path", "x"),
        scopes=_request("rm -rf /").scopes,
        project_rule="Shell(rm:*)",
    )
    response = await broker.resolve(forged)
    assert response.decision is ApprovalDecision.APPROVE_ONCE and broker.grants == ()
    assert person.asked[0].project_rule is None and person.asked[0].scopes == ()


async def test_directory_grant_through_the_broker(workspace):
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="directory"), ApprovalDecision.REJECT
    )
    broker = make_broker(workspace, person)
    assert (await broker.resolve(broker.request_for(_write("src/a.py"), MODE_ASK))).scope == "directory"
    assert (
        await broker.resolve(broker.request_for(_write("src/b.py"), MODE_ASK))
    ).approved_by == "grant:session"
    assert not (await broker.resolve(broker.request_for(_write("src/../c.py"), MODE_ASK))).approved


async def test_approve_for_the_project_writes_the_rule_and_grants_it(workspace):
    person = ScriptedApprover(ApprovalDecision.APPROVE_PROJECT, ApprovalDecision.REJECT)
    broker = make_broker(workspace, person)
    request = broker.request_for(_shell("npm run build -- --prod", str(workspace)), MODE_ASK)
    assert request.project_rule == "Shell(npm run build:*)"
    response = await broker.resolve(request)
    assert (
        response.decision is ApprovalDecision.APPROVE_PROJECT and response.scope == "Shell(npm run build:*)"
    )
    settings = json.loads((workspace / ".seepient" / "settings.json").read_text())
    assert settings == {"permissions": {"allow": ["Shell(npm run build:*)"]}}
    again = await broker.resolve(broker.request_for(_shell("npm run build", str(workspace)), MODE_ASK))
    assert again.approved_by == "grant:session" and len(person.asked) == 1


async def test_approving_a_destructive_command_for_the_project_writes_its_exact_words(workspace):
    """[p] on 'rm -rf build' never writes Shell(rm:*): the rule names these words and nothing longer."""
    person = ScriptedApprover(ApprovalDecision.APPROVE_PROJECT, ApprovalDecision.REJECT)
    broker = make_broker(workspace, person)
    request = broker.request_for(_shell("rm -rf build", str(workspace)), MODE_ASK)
    assert request.project_rule == "Shell(rm -rf build)"
    assert [s.value for s in request.scopes if s.kind == "prefix"] == ["rm -rf build"]
    assert (await broker.resolve(request)).scope == "Shell(rm -rf build)"
    settings = json.loads((workspace / ".seepient" / "settings.json").read_text())
    assert settings == {"permissions": {"allow": ["Shell(rm -rf build)"]}}
    again = await broker.resolve(broker.request_for(_shell("rm -rf build", str(workspace)), MODE_ASK))
    assert again.approved_by == "grant:session"
    wider = await broker.resolve(broker.request_for(_shell("rm -rf src", str(workspace)), MODE_ASK))
    assert not wider.approved and len(person.asked) == 2


async def test_a_project_rule_that_cannot_be_saved_approves_once_and_says_why(workspace):
    settings = workspace / ".seepient" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": [}')
    broker = make_broker(workspace, ScriptedApprover(ApprovalDecision.APPROVE_PROJECT))
    response = await broker.resolve(broker.request_for(_shell("make", str(workspace)), MODE_ASK))
    assert response.decision is ApprovalDecision.APPROVE_ONCE
    assert "not saved" in (response.feedback or "") and "invalid JSON" in (response.feedback or "")
    assert settings.read_text() == '{"permissions": {"allow": [}' and broker.grants == ()


async def test_concurrent_asks_are_put_one_at_a_time_and_a_new_grant_answers_the_waiting_one(workspace):
    person = ScriptedApprover(Answer(ApprovalDecision.APPROVE_SESSION, scope="prefix"))
    broker = make_broker(workspace, person)
    first, second = await asyncio.gather(
        broker.resolve(broker.request_for(_shell("git commit -m a", str(workspace)), MODE_ASK)),
        broker.resolve(broker.request_for(_shell("git commit -m b", str(workspace)), MODE_ASK)),
    )
    assert first.approved and second.approved and len(person.asked) == 1
    assert second.approved_by == "grant:session"


# --- reject for the rest of the session -----------------------------------------------------------------


async def test_a_session_refusal_of_a_prefix_refuses_later_commands_it_covers_without_asking(workspace):
    person = ScriptedApprover(
        Answer(ApprovalDecision.REJECT_SESSION, scope="prefix", feedback="no git commits"),
        ApprovalDecision.APPROVE_ONCE,
    )
    broker = make_broker(workspace, person)
    first = await broker.resolve(broker.request_for(_shell("git commit -m x", str(workspace)), MODE_ASK))
    assert not first.approved and first.scope == "prefix" and first.feedback == "no git commits"
    later = await broker.resolve(broker.request_for(_shell("git commit -m 'y z'", str(workspace)), MODE_ASK))
    assert not later.approved and later.approved_by == "refusal:session" and len(person.asked) == 1
    assert "commands starting with `git commit`" in (later.feedback or "")
    # Something the refused scope does not cover is still asked about.
    other = await broker.resolve(broker.request_for(_shell("make", str(workspace)), MODE_ASK))
    assert other.approved and len(person.asked) == 2


async def test_a_session_refusal_outranks_a_grant_and_the_yes_flag(workspace):
    person = ScriptedApprover(
        Answer(ApprovalDecision.APPROVE_SESSION, scope="prefix"),
        Answer(ApprovalDecision.REJECT_SESSION, scope="exact"),
    )
    broker = make_broker(workspace, person)
    assert (
        await broker.resolve(broker.request_for(_shell("git commit -m a", str(workspace)), MODE_ASK))
    ).approved
    # The grant covers this one, so the person is not asked: refuse it explicitly through a fresh broker
    # state instead, by answering the exact action of a command the grant does not cover.
    refused = broker.request_for(_shell("git commit -m a && make", str(workspace)), MODE_ASK)
    assert not (await broker.resolve(refused)).approved
    again = await broker.resolve(
        broker.request_for(_shell("git commit -m a && make", str(workspace)), MODE_ASK)
    )
    assert not again.approved and again.approved_by == "refusal:session"
    yes = make_broker(workspace, None, auto_approve=True)
    yes.restore_grant("refusal", refused.scopes[0].model_dump_json())
    answer = await yes.resolve(yes.request_for(refused.action, MODE_ASK))
    assert not answer.approved and answer.approved_by == "refusal:session"


async def test_a_session_refusal_also_refuses_asks_no_grant_may_answer(workspace):
    hard = Verdict.ask(RULE_UNPARSED, "cannot be analysed")
    person = ScriptedApprover(Answer(ApprovalDecision.REJECT_SESSION, scope="prefix"))
    broker = make_broker(workspace, person)
    action = _shell("git commit -m x", str(workspace))
    request = broker.request_for(action, hard)
    assert request.scopes == () and request.widest_scope.kind == "exact"
    first = await broker.resolve(request)
    # No prefix was offered, so only this exact action is refused from now on.
    assert not first.approved and first.scope == "exact"
    assert [r.kind for r in broker.refusals] == ["exact"]
    again = await broker.resolve(broker.request_for(action, hard))
    assert not again.approved and again.approved_by == "refusal:session" and len(person.asked) == 1


async def test_a_session_refusal_is_reported_for_storing_and_restores(workspace):
    stored: list[tuple[str, str]] = []
    person = ScriptedApprover(Answer(ApprovalDecision.REJECT_SESSION, scope="directory"))
    broker = make_broker(workspace, person, on_grant=lambda kind, value: stored.append((kind, value)))
    assert not (await broker.resolve(broker.request_for(_write("src/a.py"), MODE_ASK))).approved
    assert [kind for kind, _ in stored] == ["refusal"]
    restored = make_broker(workspace, ScriptedApprover())
    restored.restore_grant(*stored[0])
    answer = await restored.resolve(restored.request_for(_write("src/b.py"), MODE_ASK))
    assert not answer.approved and answer.approved_by == "refusal:session"
