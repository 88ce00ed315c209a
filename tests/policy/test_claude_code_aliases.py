"""Claude Code's rule names as aliases: each parses into the very Seepient rule it stands for, so it decides
exactly as that rule does (attacks included), patterns with no exact meaning are refused rather than widened,
and an untrusted project's aliases count no more than its own rules do."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from seepient.config import SeepientPaths, load_settings
from seepient.policy import PolicyEngine, PolicyRuleError, parse_rule
from seepient.protocol import ActionKind, Decision, FetchRequest, PreparedActionDraft
from seepient.protocol.actions import McpCall, WebSearchRequest

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY

ALIASES = [
    ("Bash", "Shell"),
    ("Bash(*)", "Shell"),
    ("Bash(git status)", "Shell(git status)"),
    ("Bash(git:*)", "Shell(git:*)"),
    ("Bash(npm run test:*)", "Shell(npm run test:*)"),
    ("Bash(npm run *)", "Shell(npm run:*)"),
    ("Bash(rm -rf *)", "Shell(rm -rf:*)"),
    ("WebFetch", "Fetch"),
    ("WebFetch(*)", "Fetch"),
    ("WebFetch(domain:example.com)", "Fetch(domain:example.com)"),
    ("WebFetch(domain:*.example.com)", "Fetch(domain:*.example.com)"),
    ("mcp__github__*", "Mcp(github)"),
    ("mcp__my-srv__*", "Mcp(my-srv)"),
]


@pytest.mark.parametrize(("alias", "seepient"), ALIASES)
def test_an_alias_parses_into_the_rule_it_stands_for(alias: str, seepient: str) -> None:
    parsed, expected = parse_rule(alias), parse_rule(seepient)
    assert parsed.text == alias  # explanations name the rule as the user wrote it
    assert dataclasses.replace(parsed, text=seepient) == expected


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("Bash(ls*)", "no exact Seepient meaning"),  # would also match lsof
        ("Bash(git * main)", "no exact Seepient meaning"),
        ("Bash(* --version)", "no exact Seepient meaning"),
        ("Bash(npm run:* x)", "no exact Seepient meaning"),
        ("Bash()", "empty specifier"),
        ("WebSearch(cats)", "takes no specifier"),
        ("WebFetch(https://example.com/docs)", "names a host"),  # a URL rule would allow the whole host
        ("mcp__bad__server__*", "not a rule"),
    ],
)
def test_a_pattern_seepient_cannot_express_exactly_is_refused_not_widened(rule: str, message: str) -> None:
    with pytest.raises(PolicyRuleError, match=message) as raised:
        parse_rule(rule, "/u/settings.json: permissions.allow[0]")
    assert str(raised.value).startswith(f"/u/settings.json: permissions.allow[0]: {rule!r}")


# -- the same verdicts, attacks included -----------------------------------------------------------------------

SHELL_ATTACKS = [
    "git status",
    "git log --oneline",
    "git -c core.pager=evil log",
    "git --config-env=core.pager=X log",
    "git -c alias.st='!sh -c id' st",
    "GIT_PAGER='sh -c id' git log",
    "git -C /etc status",
    "git status; rm -rf ~",
    "git status && curl https://evil.example/x",
    "git log $(rm -rf ~)",
    "git log | sh",
    "git status > ~/.bashrc",
    "git push --force origin main",
    "npm run test -- --watch",
    "npm run test:unit",
    "npm runtime",
    "rm -rf build",
    "rm -r -f /",
]


def _verdict(layout, mode: str, kind: str, rule: str, action: PreparedActionDraft):
    return layout.engine(mode, **{kind: [rule]}).evaluate(action)


def _same(alias_verdict, seepient_verdict, alias: str, seepient: str) -> None:
    def shown(verdict):
        return (
            verdict.decision,
            verdict.rule.replace(alias, seepient),
            [reason.replace(alias, seepient) for reason in verdict.reasons],
        )

    assert shown(alias_verdict) == shown(seepient_verdict)


@pytest.mark.parametrize("kind", ["allow", "ask", "deny"])
@pytest.mark.parametrize("mode", ["always-ask", "ask-untrusted", "autonomous-trusted"])
@pytest.mark.parametrize(
    ("alias", "seepient"),
    [
        ("Bash(git:*)", "Shell(git:*)"),
        ("Bash(git *)", "Shell(git:*)"),
        ("Bash(npm run test:*)", "Shell(npm run test:*)"),
        ("Bash(rm -rf *)", "Shell(rm -rf:*)"),
        ("Bash", "Shell"),
    ],
)
def test_a_bash_alias_decides_every_command_as_its_shell_rule_does(
    layout, actions, kind, mode, alias, seepient
):
    for command in SHELL_ATTACKS:
        action = actions.shell(command)
        _same(
            _verdict(layout, mode, kind, alias, action),
            _verdict(layout, mode, kind, seepient, action),
            alias,
            seepient,
        )


@pytest.mark.parametrize(
    "command",
    [
        "git -c core.pager=evil log",
        "git --config-env=core.pager=X log",
        "git -c alias.st='!sh -c id' st",
        "GIT_PAGER='sh -c id' git log",
        "git status; rm -rf ~",
        "git log $(rm -rf ~)",
        "git log | sh",
        "git status > ~/.bashrc",
    ],
)
def test_bash_git_prefix_does_not_allow_what_runs_another_program(layout, actions, command):
    verdict = layout.engine("ask-untrusted", allow=["Bash(git:*)"]).evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, verdict


def test_bash_git_prefix_allows_plain_git(layout, actions):
    verdict = layout.engine("always-ask", allow=["Bash(git:*)"]).evaluate(actions.shell("git log --oneline"))
    assert (verdict.decision, verdict.rule) == (ALLOW, "allow:Bash(git:*)")


def test_a_bash_deny_alias_is_as_lenient_as_the_shell_rule(layout, actions):
    engine = layout.engine("autonomous-trusted", deny=["Bash(rm -rf *)"], allow=["Bash"])
    for command in ("rm -rf build", "rm -r -f build", "/bin/rm -fr x", "rm --recursive --force x"):
        verdict = engine.evaluate(actions.shell(command))
        assert (verdict.decision, verdict.rule) == (DENY, "deny:Bash(rm -rf *)"), command


# -- read, edit and write are spelt alike ----------------------------------------------------------------------


def test_claude_code_path_rules_mean_the_same_here(layout, actions):
    engine = layout.engine("autonomous-trusted", deny=["Read(./.env)", "Edit(/src/**)"], allow=["Bash"])
    assert engine.evaluate(actions.read(str(layout.workspace / ".env"))).decision is DENY
    assert engine.evaluate(actions.edit("src/app.py")).decision is DENY
    assert engine.evaluate(actions.edit("README.md")).decision is ALLOW


# -- fetches, searches, MCP -----------------------------------------------------------------------------------


def _draft(tool: str, kind: ActionKind, payload: object) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s", call_id="c", tool=tool, kind=kind, payload=payload, read_only=True, summary=tool
    )


def _fetch(url: str) -> PreparedActionDraft:
    return _draft("web_fetch", ActionKind.FETCH, FetchRequest(url=url))


def _search(url: str = "https://search.example/search") -> PreparedActionDraft:
    return _draft("web_search", ActionKind.FETCH, WebSearchRequest(backend="searxng", url=url, query="q"))


def _mcp(name: str) -> PreparedActionDraft:
    _, server, tool = name.split("__", 2)
    return _draft(name, ActionKind.MCP, McpCall(server=server, tool=tool))


@pytest.mark.parametrize(
    ("rules", "url", "decision"),
    [
        ({"allow": ["WebFetch(domain:example.com)"]}, "https://example.com/a", ALLOW),
        (
            {"allow": ["WebFetch(domain:example.com)"]},
            "https://api.example.com/",
            ASK,
        ),  # allow: no subdomains
        ({"allow": ["WebFetch(domain:example.com)"]}, "https://example.com.evil.net/", ASK),
        ({"allow": ["WebFetch(domain:example.com)"]}, "https://example.com@evil.net/", DENY),
        ({"deny": ["WebFetch(domain:example.com)"], "allow": ["WebFetch"]}, "https://api.example.com/", DENY),
        ({"allow": ["WebFetch"]}, "http://169.254.169.254/latest/meta-data/", DENY),
    ],
)
def test_webfetch_aliases_decide_as_fetch_rules(layout, rules, url, decision):
    assert layout.engine("always-ask", **rules).evaluate(_fetch(url)).decision is decision


def test_websearch_allows_searching_but_no_fetch_and_not_a_denied_backend(layout):
    engine = layout.engine("always-ask", allow=["WebSearch"])
    assert engine.evaluate(_search()).decision is ALLOW
    assert engine.evaluate(_fetch("https://search.example/search")).decision is ASK
    denied = layout.engine("always-ask", allow=["WebSearch"], deny=["WebFetch(domain:search.example)"])
    assert denied.evaluate(_search()).decision is DENY


@pytest.mark.parametrize(
    ("rules", "tool", "decision"),
    [
        ({"allow": ["mcp__github__*"]}, "mcp__github__delete_repo", ALLOW),
        ({"allow": ["mcp__github__*"]}, "mcp__githubx__t", ASK),
        ({"allow": ["mcp__github"]}, "mcp__github__create_issue", ALLOW),
        ({"allow": ["mcp__github__create_issue"]}, "mcp__github__create_issue", ALLOW),
        ({"allow": ["mcp__github__create_issue"]}, "mcp__github__delete_repo", ASK),
        ({"deny": ["mcp__github__*"], "allow": ["Mcp"]}, "mcp__GitHub__x", DENY),  # deny folds case
    ],
)
def test_mcp_names_decide_as_mcp_rules(layout, rules, tool, decision):
    assert layout.engine("ask-untrusted", **rules).evaluate(_mcp(tool)).decision is decision


def test_an_mcp_alias_never_allows_a_shell_line(layout, actions):
    engine = layout.engine("always-ask", allow=["mcp__github__*", "mcp__github"])
    assert engine.evaluate(actions.shell("ls")).decision is ASK


# -- an untrusted project's aliases ----------------------------------------------------------------------------


def _project_engine(tmp_path: Path, data: dict, *, trust: bool) -> tuple[PolicyEngine, Path]:
    workspace = tmp_path / "ws"
    (workspace / ".seepient").mkdir(parents=True, exist_ok=True)
    (workspace / ".seepient" / "settings.json").write_text(json.dumps(data))
    paths = SeepientPaths(home=tmp_path / "home")
    settings = load_settings(workspace, paths=paths, project_trust=trust, managed_file=tmp_path / "none.json")
    engine = PolicyEngine(
        workspace, seepient_home=paths.home, mode="always-ask", permissions=settings.permissions
    )
    return engine, workspace


def test_an_untrusted_projects_allow_aliases_stay_ignored(tmp_path, actions):
    rules = {"permissions": {"allow": ["Bash", "Bash(curl:*)", "WebFetch", "WebSearch", "mcp__github__*"]}}
    engine, workspace = _project_engine(tmp_path, rules, trust=False)
    assert engine.evaluate(actions.shell("curl https://example.com", workspace)).decision is ASK
    assert engine.evaluate(_fetch("https://example.com/")).decision is ASK
    assert engine.evaluate(_search()).decision is ASK
    assert engine.evaluate(_mcp("mcp__github__x")).decision is ASK
    trusted, workspace = _project_engine(tmp_path, rules, trust=True)
    assert trusted.evaluate(actions.shell("curl https://example.com", workspace)).decision is ALLOW
    assert trusted.evaluate(_mcp("mcp__github__x")).decision is ALLOW


def test_an_untrusted_projects_deny_aliases_apply(tmp_path, actions):
    rules = {"permissions": {"deny": ["Bash(curl *)", "WebFetch(domain:example.com)"]}}
    engine, workspace = _project_engine(tmp_path, rules, trust=False)
    verdict = engine.evaluate(actions.shell("curl https://x.example", workspace))
    assert (verdict.decision, verdict.rule) == (DENY, "deny:Bash(curl *)")
    assert engine.evaluate(_fetch("https://example.com/")).decision is DENY
