"""Policy for worktree and sub-agent actions: the consent-mode order, verdicts on spawning a sub-agent, and
the parent's path rules re-anchored for a child that works in a worktree."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.config.settings import PermissionSettings, PermissionSources, RuleSource
from seepient.policy.delegation import MODE_ORDER, anchored_at, child_rule_sources, looser_mode
from seepient.policy.engine import PolicyEngine
from seepient.protocol import ActionKind, AgentTask, Decision, PreparedActionDraft, ReadAction


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = (tmp_path / "ws").resolve()
    path.mkdir()
    return path


def _engine(workspace: Path, tmp_path: Path, mode: str, **rules: list[str]) -> PolicyEngine:
    return PolicyEngine(
        workspace,
        seepient_home=tmp_path / "home/.seepient",
        home=tmp_path / "home",
        mode=mode,
        permissions=PermissionSettings(**rules),
    )


def _spawn(root: Path, mode: str, **changes: object) -> PreparedActionDraft:
    task = AgentTask(
        task="look around",
        tools=("read_file",),
        mode=mode,
        workspace=str(root),
        depth=1,
        parent_session_id="ses_parent",
    ).model_copy(update=changes)
    return PreparedActionDraft(
        session_id="ses_parent",
        call_id="c1",
        tool="agent",
        kind=ActionKind.AGENT,
        payload=task,
        read_only=False,
        summary="Start a sub-agent",
    )


def test_mode_order_runs_from_strictest_to_loosest() -> None:
    assert MODE_ORDER == ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
    assert looser_mode("auto", "ask-untrusted") and looser_mode("autonomous-trusted", "auto")
    assert not looser_mode("always-ask", "autonomous-trusted") and not looser_mode("auto", "auto")


@pytest.mark.parametrize(
    ("mode", "decision"),
    [
        ("always-ask", Decision.ASK),
        ("ask-untrusted", Decision.ASK),
        ("auto", Decision.ASK),
        ("autonomous-trusted", Decision.ALLOW),
    ],
)
def test_spawning_a_sub_agent_asks_in_every_mode_but_autonomous(
    workspace: Path, tmp_path: Path, mode: str, decision: Decision
) -> None:
    verdict = _engine(workspace, tmp_path, mode).evaluate(_spawn(workspace, mode))
    assert verdict.decision is decision
    assert verdict.decision is Decision.ALLOW or "read_file" in " ".join(verdict.reasons)


def test_rules_naming_the_agent_tool_decide(workspace: Path, tmp_path: Path) -> None:
    denied = _engine(workspace, tmp_path, "autonomous-trusted", deny=["agent"]).evaluate(
        _spawn(workspace, "ask-untrusted")
    )
    assert denied.decision is Decision.DENY and denied.rule == "deny:agent"
    allowed = _engine(workspace, tmp_path, "ask-untrusted", allow=["agent"]).evaluate(
        _spawn(workspace, "ask-untrusted")
    )
    assert allowed.decision is Decision.ALLOW


def test_a_forged_task_is_denied_whatever_the_mode(workspace: Path, tmp_path: Path) -> None:
    engine = _engine(workspace, tmp_path, "autonomous-trusted")
    engine.mode = "ask-untrusted"
    looser = engine.evaluate(_spawn(workspace, "autonomous-trusted"))
    assert looser.decision is Decision.DENY and looser.rule == "agent:looser_than_parent"
    elsewhere = engine.evaluate(_spawn(workspace, "ask-untrusted", workspace=str(tmp_path)))
    assert elsewhere.decision is Decision.DENY
    (workspace / ".seepient/worktrees/fake").mkdir(parents=True)
    fake = engine.evaluate(
        _spawn(
            workspace,
            "ask-untrusted",
            worktree="fake",
            workspace=str(workspace / ".seepient/worktrees/fake"),
        )
    )
    assert fake.decision is Decision.DENY and "not a worktree" in fake.reasons[0]
    climbing = engine.evaluate(_spawn(workspace, "ask-untrusted", worktree="../..", workspace=str(tmp_path)))
    assert climbing.decision is Decision.DENY


@pytest.mark.parametrize(
    ("rule", "anchored"),
    [
        ("Read(.env)", "Read(//ws/**/.env)"),
        ("Read(secret.txt)", "Read(//ws/**/secret.txt)"),
        ("Edit(/src/app.py)", "Edit(//ws/src/app.py)"),
        ("Read(config/*.key)", "Read(//ws/config/*.key)"),
        ("Read(build/)", "Read(//ws/**/build/)"),
        ("Read(~/.aws/**)", "Read(~/.aws/**)"),
        ("Read(//etc/passwd)", "Read(//etc/passwd)"),
        ("Shell(rm:*)", "Shell(rm:*)"),
        ("Read", "Read"),
    ],
)
def test_anchoring_a_rule_at_the_parent_workspace(rule: str, anchored: str) -> None:
    assert anchored_at(rule, Path("/ws")) == anchored


def test_a_child_in_a_worktree_obeys_the_parents_rules_from_there_and_from_the_parent(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "secret.txt").write_text("x")
    child = workspace / ".seepient/worktrees/w"
    child.mkdir(parents=True)
    (child / "secret.txt").write_text("x")
    sources = PermissionSources(sources=(RuleSource(kind="project", deny=("Read(secret.txt)",)),))
    engine = PolicyEngine(
        child,
        seepient_home=tmp_path / "home/.seepient",
        home=tmp_path / "home",
        mode="autonomous-trusted",
        permissions=PermissionSettings(),
        sources=child_rule_sources(sources, workspace, child),
    )

    def read(path: Path) -> Decision:
        action = PreparedActionDraft(
            session_id="s",
            call_id="c",
            tool="read_file",
            kind=ActionKind.READ,
            payload=ReadAction(operation="read_file", paths=(str(path),)),
            read_only=True,
            summary="read",
        )
        return engine.evaluate(action).decision

    assert read(child / "secret.txt") is Decision.DENY
    assert read(workspace / "secret.txt") is Decision.DENY
    assert read(workspace / "calc.py") is Decision.ALLOW
    assert child_rule_sources(sources, workspace, workspace) is sources
