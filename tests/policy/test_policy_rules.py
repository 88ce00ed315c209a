"""Rules, table-driven: every specifier kind, lenient deny matching, and precedence between sources."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, SettingsError, load_settings
from seepient.config.settings import PermissionSettings, PermissionSources, RuleSource
from seepient.policy import PolicyEngine, PolicyRuleError, parse_rule
from seepient.policy.engine import PolicyModeError
from seepient.protocol import (
    ActionKind,
    Decision,
    FetchRequest,
    PreparedActionDraft,
)
from seepient.protocol.actions import McpCall
from seepient.shell import Word

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY


def words(command: str) -> list[Word]:
    return [Word(part) for part in command.split()]


# -- Shell rules --------------------------------------------------------------------------------------------

SHELL_MATCHES = [
    # (rule, command, strict match (allow rules), lenient match (deny and ask rules))
    ("Shell(git status)", "git status", True, True),
    ("Shell(git status)", "git status -s", False, True),  # an option does not escape an exact deny
    ("Shell(git status)", "git status x", False, False),
    ("Shell(git push:*)", "git push origin main", True, True),
    ("Shell(git push:*)", "git pushx", False, False),
    ("Shell(git push:*)", "git --no-pager push", False, True),
    ("Shell(git push:*)", "git -C . push origin", False, True),
    ("Shell(git push:*)", "git --git-dir=.git push", False, True),
    ("Shell(git push:*)", "git commit -m push", False, False),
    ("Shell(git push:*)", "/usr/bin/git push", False, True),
    ("Shell(git push origin:*)", "git push -o ci.skip origin main", False, True),
    ("Shell(git push --force:*)", "git push origin main --force", False, True),
    ("Shell(git push --force:*)", "git push -f", False, True),
    ("Shell(git push --force:*)", "git push --force-with-lease", False, True),
    ("Shell(git push --force:*)", "git push origin", False, False),
    ("Shell(rm -rf:*)", "rm -rf build", True, True),
    ("Shell(rm -rf:*)", "rm -r -f build", False, True),
    ("Shell(rm -rf:*)", "rm -fR build", False, True),
    ("Shell(rm -rf:*)", "rm build --recursive --force", False, True),
    ("Shell(rm -rf:*)", "rm -r build", False, False),
    ("Shell(npm run test:*)", "npm run test:unit", False, False),  # words, not characters
    ("Shell(npm run test:*)", "npm run test -- --watch", True, True),
    ("Shell(npm run test:*)", "npm --prefix app run test", False, True),
    ("Shell(echo 'a b')", "echo a b", False, False),
    ("Shell(ls)", "LS", False, True),
    ("Shell(ls -la)", "ls -la", True, True),
    ("Shell(ls -la)", "ls -l -a", False, True),
    ("Shell(ls -la)", "ls -la src", False, False),
    ("Shell(*)", "anything at all", True, True),
    ("Shell", "anything at all", True, True),
]


@pytest.mark.parametrize(("rule", "command", "strict", "lenient"), SHELL_MATCHES)
def test_shell_rules(rule: str, command: str, strict: bool, lenient: bool) -> None:
    parsed = parse_rule(rule)
    assert parsed.matches_argv(words(command), lenient=False) is strict
    assert parsed.matches_argv(words(command), lenient=True) is lenient


def test_a_computed_word_matches_a_deny_rule_but_never_an_allow_rule() -> None:
    rule = parse_rule("Shell(git push:*)")
    argv = [Word("git"), Word("$SUB", static=False), Word("push")]
    assert rule.matches_argv(argv, lenient=True)
    assert not rule.matches_argv([Word("git"), Word("$SUB", static=False)], lenient=False)
    assert parse_rule("Shell(git push --force:*)").matches_argv(
        [Word("git"), Word("push"), Word("$FLAGS", static=False)], lenient=True
    )


# -- path rules ----------------------------------------------------------------------------------------------

PATH_MATCHES = [
    # (rule, path relative to the fake root ('ws/…', 'home/…' or absolute), strict, lenient)
    ("Read(.env)", "ws/.env", True, True),
    ("Read(.env)", "ws/a/b/.env", True, True),
    ("Read(.env)", "ws/.ENV", False, True),
    ("Read(.env)", "ws/.ｅnv", False, True),
    ("Read(.env)", "ws/.env.example", False, False),
    ("Read(/.env)", "ws/a/.env", False, False),
    ("Read(./.env)", "ws/.env", True, True),
    ("Read(src/**)", "ws/src/a/b.py", True, True),
    ("Read(src/**)", "ws/lib/src/b.py", False, False),
    ("Read(**/*.pem)", "ws/certs/k.pem", True, True),
    ("Edit(docs/*.md)", "ws/docs/a.md", True, True),
    ("Edit(docs/*.md)", "ws/docs/sub/a.md", False, False),
    ("Read(~/.config/**)", "home/.config/x", True, True),
    ("Read(~/.config/**)", "ws/.config/x", False, False),
    ("Read(//opt/secret/**)", "/opt/secret/token", True, True),
    ("Read(//opt/secret/**)", "ws/opt/secret/token", False, False),
    ("Read", "/anything", True, True),
]


@pytest.mark.parametrize(("rule", "path", "strict", "lenient"), PATH_MATCHES)
def test_path_rules(tmp_path: Path, rule: str, path: str, strict: bool, lenient: bool) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    absolute = path if path.startswith("/") else str(tmp_path / path)
    parsed = parse_rule(rule)
    assert parsed.matches_path(absolute, workspace=workspace, home=home, lenient=False) is strict
    assert parsed.matches_path(absolute, workspace=workspace, home=home, lenient=True) is lenient


def test_a_path_rule_answers_the_same_when_asked_again_and_only_for_its_own_workspace(tmp_path: Path) -> None:
    # The answers are remembered per rule; the workspace and home are part of what is asked.
    rule = parse_rule("Read(.env)")
    first, second = tmp_path / "first", tmp_path / "second"
    for _ in range(2):
        assert rule.matches_path(str(first / ".env"), workspace=first, home=tmp_path, lenient=False)
        assert not rule.matches_path(str(first / ".env"), workspace=second, home=tmp_path, lenient=False)
        assert rule.matches_path(str(first / ".ENV"), workspace=first, home=tmp_path, lenient=True)
        assert not rule.matches_path(str(first / ".ENV"), workspace=first, home=tmp_path, lenient=False)
    other = dataclasses.replace(rule, pattern="other")
    assert other._path_answers == {}


BELOW = [
    # (rule, directory, grep glob, could a file below match)
    ("Read(.env)", "ws", None, True),
    ("Read(.env)", "ws/src", None, True),
    ("Read(.env)", "ws/src", "*.py", False),
    ("Read(.env)", "ws/src", ".e*", True),
    ("Read(config/secret.json)", "ws", None, True),
    ("Read(config/secret.json)", "ws/config", None, True),
    ("Read(config/secret.json)", "ws/src", None, False),
    ("Read(config/secret.json)", "ws/config", "*.py", False),
    ("Read(/secrets)", "ws/secrets/deep", None, True),
    ("Read(**/*.pem)", "ws/a/b", None, True),
    ("Read(~/notes/**)", "ws", None, False),
    ("Read(~/notes/**)", "home", None, True),
    ("Read(~/notes/**)", "/", None, True),
    ("Read(//opt/secret/**)", "/opt", None, True),
    ("Read(//opt/secret/**)", "/var", None, False),
]


@pytest.mark.parametrize(("rule", "directory", "file_glob", "expected"), BELOW)
def test_could_match_below(tmp_path: Path, rule: str, directory: str, file_glob, expected: bool) -> None:
    absolute = directory if directory.startswith("/") else str(tmp_path / directory)
    assert (
        parse_rule(rule).could_match_below(
            absolute, workspace=tmp_path / "ws", home=tmp_path / "home", file_glob=file_glob
        )
        is expected
    )


# -- Fetch and MCP rules ---------------------------------------------------------------------------------------


def fetch(url: str) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="web_fetch",
        kind=ActionKind.FETCH,
        payload=FetchRequest(url=url),
        read_only=True,
        summary=url,
    )


def mcp(name: str) -> PreparedActionDraft:
    # Policy decides on the tool's name; the payload is what the MCP tool prepares.
    _, server, tool = (name.split("__", 2) + ["", ""])[:3]
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool=name,
        kind=ActionKind.MCP,
        payload=McpCall(server=server or "srv", tool=tool or "t"),
        read_only=False,
        summary=name,
    )


FETCH_TABLE = [
    # (rules, url, decision in always-ask mode, deciding rule)
    (
        {"allow": ["Fetch(domain:example.com)"]},
        "https://example.com/a",
        ALLOW,
        "allow:Fetch(domain:example.com)",
    ),
    (
        {"allow": ["Fetch(domain:example.com)"]},
        "https://EXAMPLE.com./a",
        ALLOW,
        "allow:Fetch(domain:example.com)",
    ),
    (
        {"allow": ["Fetch(domain:example.com)"]},
        "https://ｅｘａｍｐｌｅ.com/",
        ALLOW,
        "allow:Fetch(domain:example.com)",
    ),
    ({"allow": ["Fetch(domain:example.com)"]}, "https://api.example.com/", ASK, "mode:always-ask"),
    ({"allow": ["Fetch(domain:example.com)"]}, "https://example.com.evil.net/", ASK, "mode:always-ask"),
    ({"allow": ["Fetch(domain:example.com)"]}, "https://example.com@evil.net/", DENY, "fetch:invalid_url"),
    ({"allow": ["Fetch(domain:example.com)"]}, "https://example.com\\@evil.net/", DENY, "fetch:invalid_url"),
    ({"allow": ["Fetch(domain:example.com)"]}, "https://evil.net\\@example.com/", DENY, "fetch:invalid_url"),
    (
        {"allow": ["Fetch(domain:*.example.com)"]},
        "https://a.b.example.com/",
        ALLOW,
        "allow:Fetch(domain:*.example.com)",
    ),
    ({"allow": ["Fetch(domain:*.example.com)"]}, "https://example.com/", ASK, "mode:always-ask"),
    (
        {"deny": ["Fetch(domain:example.com)"]},
        "https://api.example.com/",
        DENY,
        "deny:Fetch(domain:example.com)",
    ),
    (
        {"deny": ["Fetch(domain:example.com)"]},
        "https://evil.net\\@example.com/",
        DENY,
        "deny:Fetch(domain:example.com)",
    ),
    (
        {"deny": ["Fetch(domain:example.com)"], "allow": ["Fetch"]},
        "https://example.com/",
        DENY,
        "deny:Fetch(domain:example.com)",
    ),
    (
        {"ask": ["Fetch(domain:example.com)"], "allow": ["Fetch"]},
        "https://example.com/",
        ASK,
        "ask:Fetch(domain:example.com)",
    ),
    (
        {"allow": ["Fetch(domain:xn--bcher-kva.example)"]},
        "https://bücher.example/",
        ALLOW,
        "allow:Fetch(domain:xn--bcher-kva.example)",
    ),
    ({"allow": ["Fetch"]}, "file:///etc/passwd", DENY, "fetch:invalid_url"),
    ({}, "https:///nohost", DENY, "fetch:invalid_url"),
]


@pytest.mark.parametrize(("rules", "url", "decision", "rule"), FETCH_TABLE)
def test_fetch_rules(layout, rules, url: str, decision: Decision, rule: str) -> None:
    verdict = layout.engine("always-ask", **rules).evaluate(fetch(url))
    assert (verdict.decision, verdict.rule) == (decision, rule), verdict


MCP_TABLE = [
    # (rules, tool, decision in ask-untrusted mode, deciding rule)
    ({}, "mcp__github__create_issue", ASK, "mode:ask-untrusted"),
    (
        {"allow": ["Mcp(github:create_issue)"]},
        "mcp__github__create_issue",
        ALLOW,
        "allow:Mcp(github:create_issue)",
    ),
    ({"allow": ["Mcp(github:create_issue)"]}, "mcp__github__delete_repo", ASK, "mode:ask-untrusted"),
    ({"allow": ["Mcp(github)"]}, "mcp__github__delete_repo", ALLOW, "allow:Mcp(github)"),
    ({"allow": ["Mcp(github:*)"]}, "mcp__github__delete_repo", ALLOW, "allow:Mcp(github:*)"),
    ({"allow": ["Mcp(github)"]}, "mcp__githubx__t", ASK, "mode:ask-untrusted"),
    ({"allow": ["Mcp"]}, "mcp__any__thing", ALLOW, "allow:Mcp"),
    (
        {"allow": ["mcp__github__create_issue"]},
        "mcp__github__create_issue",
        ALLOW,
        "allow:mcp__github__create_issue",
    ),
    ({"allow": ["mcp__github"]}, "mcp__github__create_issue", ALLOW, "allow:mcp__github"),
    (
        {"deny": ["Mcp(github:delete_repo)"], "allow": ["Mcp(github)"]},
        "mcp__github__delete_repo",
        DENY,
        "deny:Mcp(github:delete_repo)",
    ),
    ({"deny": ["Mcp(GitHub)"]}, "mcp__github__x", DENY, "deny:Mcp(GitHub)"),
    ({"ask": ["Mcp(github:push)"], "allow": ["Mcp"]}, "mcp__github__push", ASK, "ask:Mcp(github:push)"),
    ({"allow": ["Shell", "Read", "Fetch"]}, "mcp__github__x", ASK, "mode:ask-untrusted"),
]


@pytest.mark.parametrize(("rules", "tool", "decision", "rule"), MCP_TABLE)
def test_mcp_rules(layout, rules, tool: str, decision: Decision, rule: str) -> None:
    verdict = layout.engine("ask-untrusted", **rules).evaluate(mcp(tool))
    assert (verdict.decision, verdict.rule) == (decision, rule), verdict


def test_mcp_actions_in_each_mode(layout) -> None:
    expected = {"always-ask": ASK, "ask-untrusted": ASK, "auto": ASK, "autonomous-trusted": ALLOW}
    for mode, decision in expected.items():
        assert layout.engine(mode).evaluate(mcp("mcp__s__t")).decision is decision, mode


# -- precedence between sources --------------------------------------------------------------------------------


def engine_with(layout, *sources: RuleSource, managed_only: bool = False, mode: str = "ask-untrusted"):
    return PolicyEngine(
        layout.workspace,
        seepient_home=layout.seepient_home,
        mode=mode,
        permissions=PermissionSettings(),
        home=layout.home,
        sources=PermissionSources(sources=sources, allow_managed_rules_only=managed_only),
    )


def source(kind: str, **lists: list[str]) -> RuleSource:
    path = None if kind in ("command-line", "session") else Path(f"/{kind}/settings.json")
    return RuleSource(
        kind=kind, path=path, name=kind if path is None else None, **{k: tuple(v) for k, v in lists.items()}
    )  # type: ignore[arg-type]


PRECEDENCE = [
    # (sources, managed_only, command, decision, deciding rule)
    # A deny anywhere wins over an allow anywhere, whichever source is higher.
    (
        [source("managed", allow=["Shell(npm test)"]), source("user", deny=["Shell(npm:*)"])],
        False,
        "npm test",
        DENY,
        "deny:Shell(npm:*)",
    ),
    (
        [source("user", allow=["Shell(npm test)"]), source("managed", deny=["Shell(npm:*)"])],
        False,
        "npm test",
        DENY,
        "deny:Shell(npm:*)",
    ),
    (
        [source("project", allow=["Shell"]), source("command-line", deny=["Shell(curl:*)"])],
        False,
        "curl x",
        DENY,
        "deny:Shell(curl:*)",
    ),
    # An ask anywhere beats an allow anywhere: rules only ever make a verdict stricter.
    (
        [source("managed", allow=["Shell(git push:*)"]), source("user", ask=["Shell(git push:*)"])],
        False,
        "git push",
        ASK,
        "ask:Shell(git push:*)",
    ),
    # The higher source's rule is named when several match.
    (
        [source("user", deny=["Shell(rm:*)"]), source("managed", deny=["Shell(rm -rf:*)"])],
        False,
        "rm -rf b",
        DENY,
        "deny:Shell(rm -rf:*)",
    ),
    ([source("project", allow=["Shell(npm test)"])], False, "npm test", ALLOW, "allow:Shell(npm test)"),
    # allowManagedRulesOnly: allow rules of every other source stop counting; the mode's ask cannot be granted away.
    ([source("project", allow=["Shell(npm test)"])], True, "npm test", ASK, "managed_only:ask-untrusted"),
    (
        [source("command-line", allow=["Shell(npm test)"])],
        True,
        "npm test",
        ASK,
        "managed_only:ask-untrusted",
    ),
    ([source("managed", allow=["Shell(npm test)"])], True, "npm test", ALLOW, "allow:Shell(npm test)"),
    (
        [source("project", deny=["Shell(ls:*)"])],
        True,
        "ls",
        DENY,
        "deny:Shell(ls:*)",
    ),  # lower denies still bind
    ([source("user", ask=["Shell(ls:*)"])], True, "ls", ASK, "ask:Shell(ls:*)"),  # and lower asks
    ([], True, "ls", ALLOW, "mode:ask-untrusted"),  # the known-safe list is not a rule source
]


@pytest.mark.parametrize(("sources", "managed_only", "command", "decision", "rule"), PRECEDENCE)
def test_precedence(layout, actions, sources, managed_only, command, decision, rule) -> None:
    verdict = engine_with(layout, *sources, managed_only=managed_only).evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (decision, rule), verdict


def test_a_locked_out_allow_rule_is_named_in_the_ask(layout, actions) -> None:
    verdict = engine_with(
        layout, source("project", allow=["Shell(npm test)", "Edit(src/**)"]), managed_only=True
    ).evaluate(actions.shell("npm test"))
    assert "Shell(npm test)" in verdict.reasons[0] and "managed settings" in verdict.reasons[0]
    edit = engine_with(layout, source("project", allow=["Edit(src/**)"]), managed_only=True).evaluate(
        actions.edit("src/app.py")
    )
    assert edit.rule == "managed_only:ask-untrusted" and "Edit(src/**)" in edit.reasons[0]


def test_autonomous_mode_is_unaffected_by_the_lock_unless_disabled(layout, actions) -> None:
    engine = engine_with(
        layout, source("project", allow=["Shell(npm test)"]), managed_only=True, mode="bypass"
    )
    assert engine.evaluate(actions.shell("npm test")).decision is ALLOW
    with pytest.raises(PolicyModeError, match="switch the autonomous-trusted mode off") as raised:
        PolicyEngine(
            layout.workspace,
            seepient_home=layout.seepient_home,
            mode="bypass",
            permissions=PermissionSettings(),
            home=layout.home,
            sources=PermissionSources(sources=(), disabled_modes=("autonomous-trusted",)),
        )
    assert isinstance(raised.value, SettingsError)


# -- malformed rules stop the run, naming file and position -----------------------------------------------------


def test_a_malformed_rule_names_its_file_and_position(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    project = SeepientPaths.project_settings(workspace)
    project.parent.mkdir(parents=True)
    project.write_text(json.dumps({"permissions": {"deny": ["Read(.env)", "Shell(git push:*)", "Shell("]}}))
    home = SeepientPaths(home=tmp_path / "home")
    settings = load_settings(workspace, paths=home, managed_file=tmp_path / "none.json")
    with pytest.raises(PolicyRuleError) as raised:
        PolicyEngine(
            workspace, seepient_home=home.home, mode="ask-untrusted", permissions=settings.permissions
        )
    assert str(raised.value).startswith(f"{project}: permissions.deny[2]: 'Shell(': ")
    assert isinstance(raised.value, SettingsError)


def test_every_malformed_rule_is_reported_at_once(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    managed = tmp_path / "managed.json"
    managed.write_text(json.dumps({"permissions": {"allow": ["Bsh(ls)"]}}))
    user = SeepientPaths(home=tmp_path / "home")
    user.user_settings.parent.mkdir(parents=True)
    user.user_settings.write_text(json.dumps({"permissions": {"ask": ["Read(../x)", "Read(ok)"]}}))
    settings = load_settings(workspace, paths=user, managed_file=managed)
    with pytest.raises(PolicyRuleError) as raised:
        PolicyEngine(
            workspace, seepient_home=user.home, mode="ask-untrusted", permissions=settings.permissions
        )
    lines = str(raised.value).splitlines()
    assert lines[0].startswith(f"{managed}: permissions.allow[0]: 'Bsh(ls)'")
    assert lines[1].startswith(f"{user.user_settings}: permissions.ask[0]: 'Read(../x)'")
    assert len(lines) == 2
