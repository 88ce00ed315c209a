"""Every shell-safety corpus case (Codex's safety, plain-parse and execpolicy cases, other agents' dangerous
commands) through the real engine: our verdict per case is pinned, and where it differs from the other
tool's the difference is listed below with the reason. Where we are stricter that is by design; the
engine is never loosened to agree.

``shell_corpus_verdicts.json`` holds our decision for every case (``allow``/``ask``/``deny``, or the
rule that decided for rule cases). Rewrite it with ``SEEPIENT_WRITE_CORPUS_VERDICTS=1`` after a
deliberate change, and review the diff: each changed line is a changed verdict.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from seepient.protocol import ActionKind, Decision, PreparedActionDraft, ShellCommand
from seepient.shell import analyse_command

VERDICTS = Path(__file__).with_name("shell_corpus_verdicts.json")

# -- where our verdict differs, and why ---------------------------------------------------------------

# Stricter by design.
STRICTER = {
    # PowerShell and cmd.exe are not analysed: a line for them runs an unknown program, which asks.
    **{
        f"codex_command_safety_cases:{n}": "a PowerShell line is not analysed here, so it asks"
        for n in (62, 63, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 123, 124, 128)
    },
    # Codex's legacy execpolicy allows these; every write asks here, and a write outside the workspace is refused.
    "codex_execpolicy_cases:6": "cp writes a file: writes ask",
    "codex_execpolicy_cases:33": "cp writes ../baz, outside the workspace: refused",
    "codex_execpolicy_cases:34": "cp writes a file: writes ask",
    # printenv prints the environment, where secrets live; it is not on the known-safe list.
    "codex_execpolicy_cases:8": "printenv shows the environment: asks",
    "codex_execpolicy_cases:10": "printenv shows the environment: asks",
    # goose calls this safe; it writes /tmp, outside the workspace.
    "misc_agent_dangerous_command_cases:14": "cp writes /tmp, outside the workspace: refused",
}

# Looser, each for a stated reason; every one of them runs known-safe read-only commands only.
LOOSER = {
    # Codex's plain-command parser refuses subshells and background jobs outright; we analyse what runs
    # inside them.
    "codex_command_safety_cases:79": "a subshell of ls is analysed, not refused",
    "codex_command_safety_cases:80": "subshells are analysed, not refused",
    "codex_bash_plain_command_parse_cases:11": "a subshell of ls is analysed, not refused",
    "codex_bash_plain_command_parse_cases:12": "subshells are analysed, not refused",
    "codex_bash_plain_command_parse_cases:14": "background jobs are analysed; both are echo",
    # The legacy execpolicy checks argument shapes (a missing operand, a bad number for -n, a flag it
    # does not list). For a read-only program a malformed argument makes it fail, never write.
    **{
        f"codex_execpolicy_cases:{n}": "an argument-shape check of a read-only program"
        for n in (4, 5, 17, 18, 22, 25, 26, 35, 38, 39, 40, 41, 45)
    },
    # The corpus marks these unsafe on macOS only; this engine judges Linux, where they are read-only.
    "codex_command_safety_cases:11": "numfmt is read-only on Linux (the case is for macOS)",
    "codex_command_safety_cases:12": "tac is read-only on Linux (the case is for macOS)",
}


@dataclass(frozen=True)
class Case:
    key: str
    data: dict

    @property
    def source(self) -> str:
        return self.key.split(":")[0]


def load_cases(corpus) -> list[Case]:
    cases = []
    for name in (
        "codex_command_safety_cases",
        "codex_bash_plain_command_parse_cases",
        "codex_execpolicy_cases",
        "misc_agent_dangerous_command_cases",
    ):
        for number, line in enumerate(corpus("shell_safety", f"{name}.jsonl").read_text().splitlines(), 1):
            if line.strip():
                cases.append(Case(f"{name}:{number}", json.loads(line)))
    return cases


def command_of(case: Case) -> str:
    data = case.data
    if "command" in data:
        return data["command"]
    if "script" in data:
        return data["script"]
    if case.source == "codex_bash_plain_command_parse_cases":
        return data["argv"][2]
    example = data.get("example", data.get("argv"))
    return example if isinstance(example, str) else shlex.join(example)


def shell_draft(command: str, cwd: Path) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind=ActionKind.SHELL,
        payload=ShellCommand(command=command, cwd=str(cwd)),
        read_only=False,
        summary="corpus",
    )


def our_verdict(case: Case, engine_for, workspace: Path) -> str:
    """Our answer: the decision in ask-untrusted mode without rules, or for a rule case the rule that decided."""
    data = case.data
    draft = shell_draft(command_of(case), workspace)
    if data.get("kind") == "prefix_rule_example":
        listed = {"forbidden": "deny", "prompt": "ask", "allow": "allow"}[data["decision"]]
        rule = f"Shell({shlex.join(data['pattern'])}:*)"
        return engine_for(**{listed: [rule]}).evaluate(draft).rule
    return engine_for().evaluate(draft).decision.value


def agrees(case: Case, verdict: str) -> bool:
    """Whether our verdict says what the other tool's expectation says."""
    data = case.data
    expected = data.get("expected")
    if case.source == "codex_command_safety_cases":
        if "dangerous" in data["function"]:
            return verdict != "allow" if expected else verdict != "deny"
        return (verdict == "allow") is expected
    if case.source == "codex_bash_plain_command_parse_cases":
        analysis = analyse_command(command_of(case))
        if data["kind"] == "plain_command_sequence" and expected is not None:
            return analysis.parsed and [list(c.argv) for c in analysis.commands] == expected
        if expected is not None:  # a single command's prefix, through a heredoc
            return analysis.parsed and expected[0] in {c.binary for c in analysis.commands}
        return verdict != "allow"  # not provably plain: never allowed without asking
    if case.source == "codex_execpolicy_cases":
        if data["kind"] == "prefix_rule_example":
            listed = {"forbidden": "deny", "prompt": "ask", "allow": "allow"}[data["decision"]]
            rule = f"Shell({shlex.join(data['pattern'])}:*)"
            return (verdict == f"{listed}:{rule}") is (expected == "match")
        return (verdict == "allow") is (expected == "match(allowed)")
    return verdict != "allow" if data["expected_dangerous"] else verdict == "allow"


@pytest.fixture(scope="module")
def judged(tmp_path_factory, layout_factory, corpus_finder) -> list[tuple[Case, str]]:
    layout = layout_factory(tmp_path_factory.mktemp("corpora"))
    engines: dict[str, object] = {}

    def engine_for(**rules: list[str]):
        key = json.dumps(rules, sort_keys=True)
        if key not in engines:
            engines[key] = layout.engine("ask-untrusted", **rules)
        return engines[key]

    return [(case, our_verdict(case, engine_for, layout.workspace)) for case in load_cases(corpus_finder)]


def test_every_case_has_its_pinned_verdict(judged) -> None:
    ours = {case.key: verdict for case, verdict in judged}
    if os.environ.get("SEEPIENT_WRITE_CORPUS_VERDICTS") == "1":
        VERDICTS.write_text(json.dumps(ours, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(VERDICTS.read_text())
    assert len(ours) == 291 and set(pinned) == set(ours)
    changed = {key: (pinned[key], ours[key]) for key in ours if pinned[key] != ours[key]}
    assert not changed, f"verdicts changed (pinned, now): {changed}"


def test_agreement_except_where_listed(judged) -> None:
    listed = STRICTER | LOOSER
    disagreeing = {case.key for case, verdict in judged if not agrees(case, verdict)}
    assert disagreeing - set(listed) == set(), "new disagreements need a reason in STRICTER or LOOSER"
    assert set(listed) - disagreeing == set(), "listed cases that now agree: drop them from the lists"
    agreeing = len(judged) - len(disagreeing)
    print(
        f"\nshell-safety corpora: {agreeing}/{len(judged)} agree; {len(STRICTER)} stricter, {len(LOOSER)} looser"
    )


def test_stricter_cases_are_never_allowed_and_looser_ones_never_write(judged) -> None:
    by_key = {case.key: verdict for case, verdict in judged}
    cases = {case.key: case for case, _ in judged}
    for key in STRICTER:
        assert by_key[key] in ("ask", "deny"), key
    for key in LOOSER:
        assert by_key[key] == "allow", key
        analysis = analyse_command(command_of(cases[key]))
        assert analysis.known_safe, key  # every command in it is a known-safe read-only command


def test_dangerous_cases_are_refused_or_asked_in_every_mode(tmp_path, layout_factory, corpus_finder) -> None:
    layout = layout_factory(tmp_path)
    dangerous = [
        case
        for case in load_cases(corpus_finder)
        if case.data.get("expected_dangerous") is True
        or (case.data.get("function") == "command_might_be_dangerous" and case.data["expected"])
    ]
    assert len(dangerous) >= 14
    for mode in ("always-ask", "ask-untrusted", "auto"):
        engine = layout.engine(mode)
        for case in dangerous:
            verdict = engine.evaluate(shell_draft(command_of(case), layout.workspace))
            assert verdict.decision is not Decision.ALLOW, (mode, command_of(case), verdict)
