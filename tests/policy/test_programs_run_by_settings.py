"""Attacks through a setting or an environment variable that makes a program run another one (``git -c
alias.x='!cmd' x``, ``GIT_PAGER=cmd git log``, ``EDITOR=… git commit``, ``strace -o '|cmd'``): a rule for the
outer program never allows the line, a deny rule for the program run in turn refuses it, and a tracer's log
file is a write the path guard and the write rules see."""

from __future__ import annotations

import pytest

from seepient.protocol import Decision

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY

# Each runs `sh -c id` (or loads code) although only git, less, man, python or a tracer is named first.
RUNS_ANOTHER_PROGRAM = [
    "git -c alias.st='!sh -c id' st",
    "git -c alias.ST='!sh -c id' st",  # git matches alias names without regard to case
    "git -c alias.a=b -c alias.b='!sh -c id' a",  # an alias naming another alias
    "git -c alias.x='-c core.pager=sh log' x",  # an alias carrying a -c of its own
    "git -c core.sshCommand='sh -c id' fetch",
    "git -c core.fsmonitor='sh -c id' status",
    "git -c diff.external='sh -c id' diff",
    "git -c credential.helper='!sh -c id' push",
    "git -c core.hooksPath=/tmp/hooks commit -m x",
    "git -c core.editor='sh -c id' commit",
    "git -c trailer.sign.command='sh -c id' commit --trailer sign",
    "git -c tar.tgz.command='sh -c id' archive --format=tgz HEAD",
    "git -c submodule.lib.update='!sh -c id' submodule update",
    "git -c imap.tunnel='sh -c id' imap-send",
    "git -ccore.pager='sh -c id' log",
    "git --config-env=core.pager=EVIL log",
    "GIT_PAGER='sh -c id' git log",
    "PAGER='sh -c id' git log",
    "GIT_SSH_COMMAND='sh -c id' git fetch",
    "GIT_SSH=./evil git fetch",
    "GIT_EXTERNAL_DIFF='sh -c id' git diff",
    "GIT_EDITOR='sh -c id' git commit",
    "EDITOR='sh -c id' git commit",
    "VISUAL='sh -c id' git commit",
    "GIT_ASKPASS='sh -c id' git push",
    "SSH_ASKPASS='sh -c id' git push",
    'GIT_PAGER="$CMD" git log',
    "LD_PRELOAD=./evil.so git log",
    "LD_LIBRARY_PATH=. git log",
    "BASH_ENV=./evil.sh git log",
    "ENV=./evil.sh git log",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=sh git log",
    "GIT_CONFIG_PARAMETERS=\"'core.pager'='sh'\" git log",
    "GIT_EXEC_PATH=/tmp/x git log",
    "env GIT_PAGER='sh -c id' git log",
    "env -i GIT_PAGER='sh -c id' git log",
    "GIT_PAGER='sh -c id'; git log",
]


def _everything_allowed(layout):
    return layout.engine("autonomous-trusted", allow=["Shell"])


def _assert_refused_by(layout, actions, command, rule):
    """Everything allowed but ``rule``, the deny rule for the program the line runs in turn, which refuses it."""
    verdict = layout.engine("autonomous-trusted", allow=["Shell"], deny=[rule]).evaluate(
        actions.shell(command)
    )
    assert (verdict.decision, verdict.rule) == (DENY, f"deny:{rule}"), verdict


@pytest.mark.parametrize("command", RUNS_ANOTHER_PROGRAM)
@pytest.mark.parametrize("mode", ["ask-untrusted", "auto"])
def test_a_rule_for_git_alone_does_not_allow_a_line_that_runs_another_program(layout, actions, mode, command):
    verdict = layout.engine(mode, allow=["Shell(git:*)"]).evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, verdict


@pytest.mark.parametrize(
    "command",
    [
        "read GIT_PAGER; git log",
        "GIT_PAGER=r; GIT_PAGER+='m -rf build' git log",
        "GIT_PAGER=$(cat cmd.txt) git log",
        "LD_PRELOAD=./evil.so git log",
        "PYTHONPATH=. git log",
        "GIT_CONFIG_GLOBAL=./evil.cfg git log",
        "env NODE_OPTIONS=--require=./x.js git log",
    ],
)
def test_what_cannot_be_read_asks_even_where_everything_is_allowed(layout, actions, command):
    verdict = _everything_allowed(layout).evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (ASK, "shell:unparsed"), verdict


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("LESSOPEN='|sh -c id %s' less README.md", "Shell(less:*)"),
        ("MANPAGER='sh -c id' man ls", "Shell(man:*)"),
        ("PYTHONSTARTUP=evil.py python3", "Shell(python3:*)"),
        ("NODE_OPTIONS='--require ./evil.js' node app.js", "Shell(node:*)"),
        ("PERL5OPT=-Mevil perl x.pl", "Shell(perl:*)"),
        ("strace -o '|sh -c id' ls", "Shell(strace:*)"),
        ("env RSYNC_RSH='sh -c id' rsync a b:c", "Shell(env:*)"),
    ],
)
def test_other_programs_told_to_run_a_command_are_not_allowed_by_their_own_rule(
    layout, actions, command, allow
):
    verdict = layout.engine("ask-untrusted", allow=[allow]).evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, verdict


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x='!rm' x -rf build",  # the words after a '!' alias are its arguments
        "git -c alias.a=b -c alias.b='!rm -rf build' a",
        "git -c core.pager='rm -rf build' log",
        "git -c credential.helper='!rm -rf build' fetch",
        "GIT_PAGER='rm -rf build' git log",
        "env EDITOR='rm -rf build' git commit",
        "export GIT_SSH_COMMAND='rm -rf build'; git fetch",
        "declare -x GIT_EDITOR='rm -rf build'; git commit",
        "GIT_PAGER='rm -rf build'; git log",
        "sudo GIT_PAGER='rm -rf build' git log",
        "LESSOPEN='|rm -rf build %s' less README.md",
        "strace -o '!rm -rf build' ls",
    ],
)
def test_a_deny_rule_for_the_program_run_in_turn_refuses_the_line(layout, actions, command):
    _assert_refused_by(layout, actions, command, "Shell(rm -rf:*)")


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("GIT_PAGER='cat ~/.ssh/id_rsa' git log", "path_guard:sensitive"),
        ("git -c alias.x='!cat' x ~/.ssh/id_rsa", "path_guard:sensitive"),
        ("GIT_PAGER='sudo id' git log", "shell:privileged"),
        ("git -c alias.x='!sudo rm -rf /' x", "shell:privileged"),
    ],
)
def test_what_a_launched_program_reaches_is_checked_like_any_command(layout, actions, command, rule):
    engine = layout.engine("autonomous-trusted", allow=["Shell(git:*)"])
    verdict = engine.evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (DENY, rule), verdict


def test_the_launched_program_is_allowed_by_a_rule_naming_it(layout, actions):
    engine = layout.engine("ask-untrusted", allow=["Shell(git:*)", "Shell(less:*)"])
    verdict = engine.evaluate(actions.shell("GIT_PAGER='less -R' git log"))
    assert verdict.decision is ALLOW, verdict
    verdict = engine.evaluate(actions.shell("git -c core.pager='less -R' log"))
    assert verdict.decision is ALLOW, verdict


def test_a_launched_command_is_never_known_safe(layout, actions):
    engine = layout.engine("ask-untrusted")
    assert engine.evaluate(actions.shell("git log")).decision is ALLOW
    for command in ("GIT_PAGER=cat git log", "git -c core.pager=cat log", "git -c alias.l='!ls' l"):
        verdict = engine.evaluate(actions.shell(command))
        assert verdict.decision is ASK, (command, verdict)


def test_settings_that_run_nothing_stay_plain(layout, actions):
    engine = layout.engine("ask-untrusted", allow=["Shell(git:*)"])
    for command in (
        "GIT_PAGER= git log",
        "git -c color.ui=never log",
        "git -c alias.l='log --oneline' l",
        "git -c submodule.lib.update=rebase submodule update",
    ):
        verdict = engine.evaluate(actions.shell(command))
        assert verdict.decision is ALLOW, (command, verdict)


# -- a tracer's log is a file it writes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("strace -o ~/.bashrc ls", "path_guard:outside_workspace"),
        ("strace -ff -o .seepient/settings.json ls", "self_protection"),
        ("strace --output=.seepient/settings.json ls", "self_protection"),
        ("ltrace -o ~/.bashrc ls", "path_guard:outside_workspace"),
        ("ltrace -o.seepient/settings.json ls", "self_protection"),
        ("strace -o src/app.py ls", "deny:Write(src/app.py)"),
    ],
)
def test_a_tracer_log_goes_through_the_write_policy(layout, actions, command, rule):
    engine = layout.engine("autonomous-trusted", allow=["Shell"], deny=["Write(src/app.py)"])
    verdict = engine.evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (DENY, rule), verdict


def test_a_tracer_log_inside_the_workspace_is_an_ordinary_write(layout, actions):
    # A wrapper's rule and the traced program's rule together open the line (see test_wrapper_allow_rules).
    engine = layout.engine("ask-untrusted", allow=["Shell(strace:*)", "Shell(ls:*)"])
    verdict = engine.evaluate(actions.shell("strace -f -o trace.log ls"))
    assert verdict.decision is ALLOW, verdict
    verdict = layout.engine(
        "ask-untrusted", ask=["Edit(trace.log)"], allow=["Shell(strace:*)", "Shell(ls:*)"]
    ).evaluate(actions.shell("strace -f -o trace.log ls"))
    assert (verdict.decision, verdict.rule) == (ASK, "ask:Edit(trace.log)"), verdict


# -- jq's files, and lookups that run nothing ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "jq --rawfile key ~/.ssh/id_rsa -n '$key'",
        "jq --slurpfile c ~/.aws/credentials -n '$c'",
        "jq -f ~/.ssh/id_rsa README.md",
        "jq --arg x y . ~/.ssh/id_rsa",
    ],
)
def test_files_jq_reads_through_its_options_are_checked(layout, actions, command):
    verdict = _everything_allowed(layout).evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (DENY, "path_guard:sensitive"), verdict


def test_jq_variable_values_are_not_files(layout, actions):
    engine = layout.engine("ask-untrusted", deny=["Read(.env)"])
    for command in (
        "jq --arg n README.md . src/app.py",  # the value is a string for the filter, not a file jq opens
        "jq -n --argjson v 1 '$v'",
        "jq -n --args '$ARGS' a b",
        "jq --indent 2 . README.md",
    ):
        verdict = engine.evaluate(actions.shell(command))
        assert verdict.decision is ALLOW, (command, verdict)
    verdict = engine.evaluate(actions.shell("jq --slurpfile n .env -n '$n'"))
    assert (verdict.decision, verdict.rule) == (DENY, "deny:Read(.env)"), verdict


def test_command_v_is_a_lookup_and_command_still_runs_its_program(layout, actions):
    engine = layout.engine("ask-untrusted", deny=["Shell(rm:*)"])
    for command in ("command -v rm", "command -V rm", "command -pv rm"):
        verdict = engine.evaluate(actions.shell(command))
        assert verdict.decision is ALLOW, (command, verdict)
    verdict = engine.evaluate(actions.shell("command rm -rf build"))
    assert (verdict.decision, verdict.rule) == (DENY, "deny:Shell(rm:*)"), verdict


def test_sudo_l_is_read_and_stays_privileged(layout, actions):
    verdict = layout.engine("autonomous-trusted", allow=["Shell(git:*)"]).evaluate(actions.shell("sudo -l"))
    assert (verdict.decision, verdict.rule) == (DENY, "shell:privileged"), verdict
    assert not any("cannot be fully analysed" in reason for reason in verdict.reasons), verdict


# -- options that name a command the program runs ----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ssh -o ProxyCommand='rm -rf build' host",
        "ssh -oproxycommand='rm -rf build' host",
        "scp -o 'LocalCommand rm -rf build' a host:b",
        "sftp -o KnownHostsCommand='rm -rf build' host",
        "rsync -e 'rm -rf build' a host:b",
        "rsync -ave 'rm -rf build' a host:b",
        "rsync --rsh='rm -rf build' a host:b",
        "tar -I 'rm -rf build' -cf a.tar src",
        "tar --use-compress-program='rm -rf build' -cf a.tar src",
        "tar --checkpoint-action=exec='rm -rf build' -cf a.tar src",
        "tar --to-command='rm -rf build' -xf a.tar",
        "man -P 'rm -rf build' ls",
        "man --pager='rm -rf build' ls",
        "sort --compress-program=rm README.md",
        "zip -TT 'rm -rf build' -T a.zip README.md",
        "script -qc 'rm -rf build' /dev/null",
    ],
)
def test_a_command_named_by_an_option_is_a_command_of_the_line(layout, actions, command):
    _assert_refused_by(layout, actions, command, "Shell(rm:*)")
    outer = command.split()[0]
    verdict = layout.engine("ask-untrusted", allow=[f"Shell({outer}:*)"]).evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, verdict


@pytest.mark.parametrize(
    "command",
    [
        "vim -c '!rm -rf build' README.md",
        "vim +'!rm -rf build' README.md",
        "nvim --cmd 'lua os.execute(\"id\")'",
        "gdb -batch -ex 'shell id'",
        "emacs --batch --eval '(shell-command \"id\")'",
        "ssh -F ./ssh_config host",
        'rsync -e "$RSH" a host:b',
    ],
)
def test_an_option_running_code_that_cannot_be_read_asks(layout, actions, command):
    verdict = _everything_allowed(layout).evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (ASK, "shell:unparsed"), verdict


def test_options_that_run_nothing_stay_plain(layout, actions):
    engine = layout.engine("ask-untrusted", allow=["Shell(rsync:*)", "Shell(ssh:*)", "Shell(vim:*)"])
    for command in (
        "ssh -o ProxyCommand=none -o Port=22 host",
        "vim +10 README.md",
        "rsync -avz src dst",
        "rsync -e 'ssh -p 2222' src host:dst",  # allowed because a rule names ssh too
    ):
        verdict = engine.evaluate(actions.shell(command))
        assert verdict.decision is ALLOW, (command, verdict)
    verdict = layout.engine("ask-untrusted", allow=["Shell(rsync:*)"]).evaluate(
        actions.shell("rsync -e 'ssh -p 2222' src host:dst")
    )
    assert verdict.decision is not ALLOW, verdict


@pytest.mark.parametrize(
    "command",
    [
        "fakeroot rm -rf build",
        "chrt -f 10 rm -rf build",
        "numactl -N 0 rm -rf build",
        "faketime '2020-01-01' rm -rf build",
        "sshpass -e rm -rf build",
        "valgrind --tool=none rm -rf build",
        "xvfb-run -a rm -rf build",
        "catchsegv rm -rf build",
        "dbus-launch rm -rf build",
        "caffeinate -i rm -rf build",
        "cgexec -g cpu:low rm -rf build",
        "systemd-run --user rm -rf build",
    ],
)
def test_a_deny_rule_sees_through_the_other_wrappers(layout, actions, command):
    _assert_refused_by(layout, actions, command, "Shell(rm:*)")


def test_systemd_run_starts_its_command_outside_the_sandbox(layout, actions):
    verdict = _everything_allowed(layout).evaluate(actions.shell("systemd-run --user make"))
    assert (verdict.decision, verdict.rule) == (ASK, "shell:dangerous"), verdict
    verdict = _everything_allowed(layout).evaluate(actions.shell("valgrind --log-file=~/.bashrc ./app"))
    assert (verdict.decision, verdict.rule) == (DENY, "path_guard:outside_workspace"), verdict
