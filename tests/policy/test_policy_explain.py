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
        "decided_by": "the consent mode ask-untrusted (from the default): no rule and no check decided",
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


def test_decided_by_names_the_rule_that_decided_when_two_files_hold_it(where, layout) -> None:
    """The same allow rule in the project and the user settings: for a privileged command it is the user's
    that decides (a project's cannot open one), and explain names that file."""
    project = layout.workspace / ".seepient" / "settings.json"
    user = layout.seepient_home / "settings.json"
    project.write_text(json.dumps({"permissions": {"allow": ["Shell(sudo true)", "Shell(make)"]}}))
    user.write_text(json.dumps({"permissions": {"allow": ["Shell(sudo true)", "Shell(make)"]}}))
    privileged = explain("shell", "sudo true", **where)
    assert privileged.decision is Decision.ALLOW
    assert (
        privileged.decided_by
        == f"allow rule Shell(sudo true) at {user}: permissions.allow[0] (user settings)"
    )
    plain = explain("shell", "make", **where)
    # The project is not trusted, so its allow rules do not count yet: the user's decides here too.
    assert plain.decided_by == f"allow rule Shell(make) at {user}: permissions.allow[1] (user settings)"


def test_decided_by_for_checks_and_a_managed_lock(where, layout, tmp_path: Path) -> None:
    fetched = explain("fetch", "http://169.254.169.254/", mode="bypass", **where)
    assert fetched.rule == "fetch:address_policy" and "as of 2025-10-09" in fetched.decided_by
    assert "privileged-command check" in explain("shell", "insmod x.ko", **where).decided_by
    managed = tmp_path / "managed.json"
    managed.write_text(json.dumps({"permissions": {"allowManagedRulesOnly": True}}))
    locked = explain("shell", "make", **{**where, "managed_file": managed})
    assert locked.rule == "managed_only:ask-untrusted"
    assert f"locked by {managed}" in locked.decided_by
