"""``policy.explain`` in process: drafts built as the tools build them, judged with the workspace's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, SettingsError
from seepient.policy.explain import ExplainInputError, explain
from seepient.protocol import Capability, Decision


@pytest.fixture
def where(layout, tmp_path: Path) -> dict:
    return {
        "workspace": layout.workspace,
        "paths": SeepientPaths(home=layout.seepient_home),
        "managed_file": tmp_path / "no-managed.json",
        "home": layout.home,
    }


def test_a_shell_command_is_prepared_by_the_shell_tool(where) -> None:
    result = explain("shell", "cd src && cat app.py | wc -l", **where)
    assert result.decision is Decision.ALLOW and result.rule == "mode:ask-untrusted"
    assert [c.argv for c in result.commands] == [("cd", "src"), ("cat", "app.py"), ("wc", "-l")]
    assert result.action is not None and result.action.tool == "shell"
    assert result.action.payload.cwd == str(where["workspace"])  # type: ignore[union-attr]
    assert result.to_json() == {
        "decision": "allow",
        "reasons": list(result.reasons),
        "rule": "mode:ask-untrusted",
        "commands": [
            {"argv": ["cd", "src"], "binary": "cd"},
            {"argv": ["cat", "app.py"], "binary": "cat"},
            {"argv": ["wc", "-l"], "binary": "wc"},
        ],
        "capabilities": [],
    }
    json.dumps(result.to_json())


def test_capabilities_come_from_the_analysis(where) -> None:
    result = explain("shell", "curl https://x.example/ -o out.txt", **where)
    assert result.capabilities == (Capability.NETWORK, Capability.WRITE_WORKSPACE)


def test_reads_edits_writes_and_fetches(where, layout) -> None:
    assert explain("read", "README.md", **where).decision is Decision.ALLOW
    edit = explain("edit", "README.md", **where)
    assert edit.decision is Decision.ASK and edit.action is not None
    assert edit.action.payload.pre_image_sha256 is not None  # type: ignore[union-attr]
    assert explain("write", "brand-new.txt", **where).action.payload.pre_image_sha256 is None  # type: ignore[union-attr]
    assert explain("fetch", "https://example.com", mode="bypass", **where).decision is Decision.ALLOW


def test_the_guard_refuses_before_policy_as_in_a_session(where, layout) -> None:
    result = explain("read", str(layout.home / ".ssh" / "id_rsa"), **where)
    assert (result.decision, result.rule, result.action) == (Decision.DENY, "path_guard:sensitive", None)
    outside = explain("edit", "../outside/notes.txt", **where)
    assert outside.decision is Decision.DENY


def test_the_workspace_settings_apply(where, layout) -> None:
    (layout.workspace / ".seepient" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(.env)"], "mode": "always-ask"}})
    )
    result = explain("shell", "grep TOKEN .env", **where)
    assert (result.decision, result.rule, result.mode) == (Decision.DENY, "deny:Read(.env)", "always-ask")
    assert result.sources == (f"project settings {layout.workspace / '.seepient' / 'settings.json'}",)
    assert explain("shell", "ls", mode="ask-untrusted", **where).decision is Decision.ALLOW


def test_what_cannot_be_prepared_is_bad_input(where) -> None:
    with pytest.raises(ExplainInputError, match="is a directory"):
        explain("edit", "src", **where)
    with pytest.raises(ExplainInputError, match="cannot fetch"):
        explain("fetch", "gopher://x", **where)
    with pytest.raises(SettingsError, match="unknown consent mode"):
        explain("shell", "ls", mode="yolo", **where)
    with pytest.raises(SettingsError, match="not a directory"):
        explain("shell", "ls", **{**where, "workspace": where["workspace"] / "missing"})
