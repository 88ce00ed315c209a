"""Policy for reading and killing background processes: reading is a read inside the workspace, killing one's
own process is like a known-safe command, and rules naming the tools still decide first."""

from __future__ import annotations

from pathlib import Path

import pytest

from seepient.config.settings import PermissionSettings
from seepient.policy.engine import PolicyEngine
from seepient.protocol import Decision, PreparedActionDraft
from seepient.protocol.actions import ProcessControl


def _draft(operation: str) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="ses_p",
        call_id="call_p",
        tool=f"shell_{operation}",
        kind="process",
        payload=ProcessControl(operation=operation, process_id="bg_0123"),  # type: ignore[arg-type]
        read_only=operation == "output",
        summary="x",
    )


@pytest.mark.parametrize(
    ("mode", "output", "kill"),
    [
        ("always-ask", Decision.ALLOW, Decision.ASK),
        ("ask-untrusted", Decision.ALLOW, Decision.ALLOW),
        ("auto", Decision.ALLOW, Decision.ALLOW),
        ("autonomous-trusted", Decision.ALLOW, Decision.ALLOW),
    ],
)
def test_modes(tmp_path: Path, mode: str, output: Decision, kill: Decision) -> None:
    engine = PolicyEngine(
        tmp_path, seepient_home=tmp_path / "home", mode=mode, permissions=PermissionSettings()
    )
    assert engine.evaluate(_draft("output")).decision is output
    assert engine.evaluate(_draft("kill")).decision is kill


def test_rules_that_name_the_tool_decide_first(tmp_path: Path) -> None:
    permissions = PermissionSettings(deny=["shell_kill"], ask=["shell_output"])
    engine = PolicyEngine(
        tmp_path, seepient_home=tmp_path / "home", mode="autonomous-trusted", permissions=permissions
    )
    killed = engine.evaluate(_draft("kill"))
    assert killed.decision is Decision.DENY and killed.rule == "deny:shell_kill"
    assert engine.evaluate(_draft("output")).decision is Decision.ASK
