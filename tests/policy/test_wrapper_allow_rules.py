"""An allow rule opens a wrapped command only when rules cover the wrapper and the program it runs: a rule
for `env`, `nice`, `timeout`, `fakeroot`… alone never opens whatever they run, and a rule for the program
alone does not open it behind a wrapper. A rule that spells out the wrapped command itself opens exactly that."""

from __future__ import annotations

import pytest

from seepient.protocol import Decision

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Shell(env:*)", "env rm -rf build"),
        ("Shell(env:*)", "env FOO=1 rm -rf build"),
        ("Shell(nice:*)", "nice -n 5 rm -rf build"),
        ("Shell(timeout:*)", "timeout 5 curl -X POST https://example.com"),
        ("Shell(nohup:*)", "nohup rm -rf build"),
        ("Shell(time:*)", "time rm -rf build"),
        ("Shell(fakeroot:*)", "fakeroot rm -rf build"),
        ("Shell(strace:*)", "strace -f rm -rf build"),
        ("Shell(xargs:*)", "xargs rm -rf"),
        ("Shell(env:*)", "env nice timeout 5 rm -rf build"),
    ],
)
def test_a_wrappers_rule_alone_does_not_open_what_it_runs(layout, actions, rule, command):
    verdict = layout.engine("ask-untrusted", allow=[rule]).evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, verdict


@pytest.mark.parametrize(
    ("rules", "command"),
    [
        (["Shell(make:*)"], "nice make"),
        (["Shell(make:*)"], "env FOO=1 make"),
        (["Shell(nice:*)", "Shell(env:*)", "Shell(make:*)"], "env nice timeout 5 make"),
    ],
)
def test_a_programs_rule_alone_does_not_open_it_behind_a_wrapper(layout, actions, rules, command):
    verdict = layout.engine("ask-untrusted", allow=rules).evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, verdict


@pytest.mark.parametrize(
    ("rules", "command"),
    [
        (["Shell(nice:*)", "Shell(make:*)"], "nice make"),
        (["Shell(env:*)", "Shell(make:*)"], "env FOO=1 make test"),
        (["Shell(timeout:*)", "Shell(make:*)"], "timeout 60 make"),
        (["Shell(timeout 60 make)"], "timeout 60 make"),
        (["Shell(nice make:*)"], "nice make test"),
    ],
)
def test_rules_for_every_level_open_the_wrapped_command(layout, actions, rules, command):
    verdict = layout.engine("ask-untrusted", allow=rules).evaluate(actions.shell(command))
    assert verdict.decision is ALLOW, verdict


def test_a_deny_rule_for_the_wrapped_program_still_wins(layout, actions):
    engine = layout.engine("ask-untrusted", allow=["Shell(env:*)", "Shell(rm:*)"], deny=["Shell(rm:*)"])
    assert engine.evaluate(actions.shell("env rm -rf build")).decision is DENY
