"""Session grant scopes, table by table: what a command-prefix grant and a directory grant cover (attacks
included), which prefix and rule an ask offers, and which asks may be granted beyond once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seepient.approval.scopes import (
    ScopeFinder,
    SessionGrant,
    grant_for,
    grant_for_rule,
    once_only_reason,
)
from seepient.policy.checks.findings import RULE_CONTAINS_SENSITIVE, RULE_UNPARSED, RULE_UNVERIFIABLE
from seepient.policy.paths import RULE_SELF, PathGuard
from seepient.policy.rules import parse_rule
from seepient.protocol import (
    ApprovalScope,
    FileChange,
    PreparedActionDraft,
    ReadAction,
    ShellCommand,
    Verdict,
)

MODE_ASK = Verdict.ask("mode:ask-untrusted", "not every command is a known-safe read-only command")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "srcx").mkdir()
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "secrets.txt").write_text("not for src grants\n")
    os.symlink(root / "secrets.txt", root / "src" / "escape.py")
    return root


@pytest.fixture
def finder(workspace: Path, tmp_path: Path) -> ScopeFinder:
    guard = PathGuard(workspace, seepient_home=tmp_path / "seepient-home", home=tmp_path / "home")
    return ScopeFinder(guard.workspace, guard, home=guard.home)


def shell(command: str, cwd: Path) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind="shell",
        payload=ShellCommand(command=command, cwd=str(cwd)),
        read_only=False,
        summary=command,
    )


def change(path: str) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="write_file",
        kind="file_change",
        payload=FileChange(path=path, pre_image_sha256=None, new_content="x\n"),
        read_only=False,
        summary=f"Write {path}",
    )


def prefix_grant(spec: str) -> SessionGrant:
    return SessionGrant(kind="prefix", label=spec, rule=parse_rule(f"Shell({spec})", "test"))


@pytest.mark.parametrize(
    ("command", "covered"),
    [
        ("git commit -m x", True),
        ("git commit", True),
        ("git  commit   --amend", True),
        ("'git' \"commit\" -m x", True),  # the same argv once quotes are removed
        ("git commit -m x; git commit -m y", True),  # every simple command is a git commit
        ("git commit -m x 2>/dev/null", True),  # a sink is not a write
        ("git commit -m x && rm -rf build", False),
        ("git commit -m x || rm -rf build", False),
        ("git commit -m x; rm -rf build", False),
        ("git commit -m x & rm -rf build", False),
        ("git commit -m x\nrm -rf build", False),
        ("git commit -m x | tee log", False),
        ('git commit -m "$(rm -rf build)"', False),
        ("git commit -m `rm -rf build`", False),
        ("git commit -m x > out.txt", False),
        ("git commitx", False),
        ("git commi", False),
        ("git", False),
        ("gitx commit", False),
        ("/usr/bin/git commit", False),
        ("git -c core.hooksPath=/tmp commit", False),
        ("sudo git commit", False),
        ("env git commit", False),
        ("FOO=1; git commit", False),
        ("PATH=. git commit", False),
        ("bash -c 'git commit -m x; rm -rf build'", False),
        ("(git commit -m x; rm -rf build)", False),
        ("git commit -m x $(", False),  # cannot be parsed: never covered
    ],
)
def test_prefix_grant_covers_only_lines_made_entirely_of_the_prefix(finder, workspace, command, covered):
    assert finder.covers(prefix_grant("git commit:*"), shell(command, workspace)) is covered


@pytest.mark.parametrize(
    ("path", "covered"),
    [
        ("src/a.py", True),
        ("src/new.py", True),
        ("src/deep/b.py", True),
        ("./src/a.py", True),
        ("src/../secrets.txt", False),
        ("src/deep/../../secrets.txt", False),
        ("srcx/a.py", False),
        ("a.py", False),
        ("secrets.txt", False),
        ("src/escape.py", False),  # a symlink in src/ pointing at ../secrets.txt
        ("../ws/src/a.py", True),  # the same file, reached through the workspace's own name
        ("/etc/passwd", False),
    ],
)
def test_directory_grant_covers_files_under_the_directory_after_resolution(finder, path, covered):
    grant = SessionGrant(kind="directory", label="edits under src/", directory=Path("src"))  # type: ignore[arg-type]
    assert finder.covers(grant, change(path)) is covered


def test_directory_grant_at_the_root_covers_the_workspace_only(finder):
    grant = grant_for(ApprovalScope(kind="directory", value=".", label="edits anywhere"))
    assert finder.covers(grant, change("a.py")) and finder.covers(grant, change("src/deep/b.py"))
    assert not finder.covers(grant, change("../outside.py"))


def test_a_directory_grant_never_covers_a_shell_line_and_a_prefix_grant_never_a_file(finder, workspace):
    directory = grant_for(ApprovalScope(kind="directory", value="src", label="src"))
    assert not finder.covers(directory, shell("touch src/a.py", workspace))
    assert not finder.covers(prefix_grant("touch:*"), change("src/a.py"))


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("git commit -m x", "git commit:*"),
        ("git fetch origin main", "git fetch:*"),
        ("npm run test:unit -- --watch", "npm run test:unit:*"),
        ("uv run pytest -q", "uv run pytest:*"),
        ("pytest -q tests", "pytest:*"),
        ("touch made", "touch:*"),  # a file operand is not a subcommand
        ("make", "make:*"),
        ("./gradlew build --offline", "./gradlew build:*"),
        ("git commit -m x; git commit -m y", "git commit:*"),
        ("git commit -m x && rm -rf build", None),  # the prefix would not cover what is being approved
        ("sudo make install", None),  # behind a wrapper the prefix would mean the wrapper
        ("FOO=1; make", None),
        ('"$TOOL" build', None),
    ],
)
def test_offered_prefix_comes_from_the_first_command_and_covers_the_line(finder, workspace, command, prefix):
    offer = finder.offer(shell(command, workspace), MODE_ASK)
    kinds = {scope.kind: scope for scope in offer.scopes}
    assert kinds["exact"].value == shell(command, workspace).digest
    if prefix is None:
        assert "prefix" not in kinds and offer.project_rule is None
    else:
        assert kinds["prefix"].value == prefix
        assert offer.project_rule == f"Shell({prefix})"
        assert finder.covers(grant_for(kinds["prefix"]), shell(command, workspace))


@pytest.mark.parametrize(
    ("path", "directory", "rule"),
    [
        ("src/a.py", "src", "Edit(/src/**)"),
        ("src/deep/b.py", "src/deep", "Edit(/src/deep/**)"),
        ("notes.md", ".", "Edit(/notes.md)"),
        ("src/../srcx/c.py", "srcx", "Edit(/srcx/**)"),
        ("src/escape.py", ".", "Edit(/secrets.txt)"),  # the symlink's target is what is changed
        ("src/we*ird.py", "src", None),  # a glob character: no rule that would mean something else
        ("src/sp ace.py", "src", None),
    ],
)
def test_file_change_offers_its_resolved_parent_directory_and_an_edit_rule(finder, path, directory, rule):
    offer = finder.offer(change(path), MODE_ASK)
    kinds = {scope.kind: scope for scope in offer.scopes}
    assert kinds["directory"].value == directory
    assert offer.project_rule == rule


def test_reads_offer_only_the_exact_action(finder, workspace):
    read = PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="read_file",
        kind="read",
        payload=ReadAction(operation="read_file", paths=("/usr/share/dict/words",)),
        read_only=True,
        summary="read",
    )
    offer = finder.offer(read, Verdict.ask("mode:ask-untrusted", "it reads outside the workspace"))
    assert [s.kind for s in offer.scopes] == ["exact"] and offer.project_rule is None


@pytest.mark.parametrize(
    ("verdict", "grantable"),
    [
        (Verdict.ask("mode:ask-untrusted", "x"), True),
        (Verdict.ask("mode:always-ask", "x"), True),
        (Verdict.ask("mode:auto", "x"), True),
        (Verdict.ask(RULE_UNPARSED, "x"), False),
        (Verdict.ask(RULE_UNVERIFIABLE, "x"), False),
        (Verdict.ask(RULE_CONTAINS_SENSITIVE, "x"), False),
        (Verdict.ask(RULE_SELF, "x"), False),  # a recursive write that would reach Seepient's state
        (Verdict.ask("ask:Shell(git push:*)", "x"), False),  # a person's ask rule asks every time
        (Verdict.ask("some:future_check", "x"), False),  # anything not named as a mode ask is once-only
        (Verdict.deny("deny:Shell(rm:*)", "x"), False),
        (Verdict.allow("mode:ask-untrusted", "x"), False),
    ],
)
def test_only_asks_of_the_consent_mode_can_be_granted_beyond_once(finder, workspace, verdict, grantable):
    assert (once_only_reason(verdict) is None) is grantable
    offer = finder.offer(shell("git commit -m x", workspace), verdict)
    assert bool(offer.scopes) is grantable and (offer.project_rule is not None) is grantable


def test_a_project_rule_grant_covers_what_the_rule_covers(finder, workspace):
    shell_rule = grant_for_rule("Shell(git commit:*)")
    assert finder.covers(shell_rule, shell("git commit -m y", workspace))
    assert not finder.covers(shell_rule, shell("git commit -m y && rm x", workspace))
    edit_rule = grant_for_rule("Edit(/src/**)")
    assert finder.covers(edit_rule, change("src/deep/b.py"))
    assert not finder.covers(edit_rule, change("src/../secrets.txt"))
    assert not finder.covers(edit_rule, change("srcx/a.py"))


# Destructive programs and forms: an ask offers this exact action or these exact words, never a prefix.
DESTRUCTIVE_LINES = [
    "rm -rf build",
    "rm build/a.o",
    "rmdir build",
    "chmod -R 755 src",
    "chmod +x run.sh",
    "chown -R me src",
    "git push origin main",
    "git push --force origin main",
    "git -C . push -f",
    "git reset --hard HEAD~1",
    "git clean -fdx",
    "git checkout -- src/a.py",
    "git branch -D old",
    "git stash drop",
    "dd if=/dev/zero of=disk.img bs=1M count=1",
    "find . -name '*.pyc' -delete",
    "rsync -a --delete src/ dst/",
    "truncate -s 0 log.txt",
    "shred -u secrets.txt",
    "kill 1234",
    "pkill -f server",
    "crontab -r",
    "docker rm -f web",
    "kubectl delete pod web",
    "timeout 5 rm -rf build",
    "/bin/rm -rf build",
    "RM -rf build",
]


@pytest.mark.parametrize("command", DESTRUCTIVE_LINES)
def test_destructive_lines_are_offered_exact_words_never_a_prefix(finder, workspace, command):
    offer = finder.offer(shell(command, workspace), MODE_ASK)
    kinds = {scope.kind: scope for scope in offer.scopes}
    assert kinds["exact"].value == shell(command, workspace).digest
    for offered in [kinds["prefix"].value] if "prefix" in kinds else []:
        assert not offered.endswith(":*"), offered
        assert offer.project_rule == f"Shell({offered})"
    if offer.project_rule is not None:
        rule = parse_rule(offer.project_rule)
        assert (
            not rule.prefix and rule.argv is not None and len(rule.argv) > 1 or rule.argv == ("crontab", "-r")
        )


def test_an_exact_words_grant_covers_those_words_and_nothing_longer(finder, workspace):
    offer = finder.offer(shell("rm -rf build", workspace), MODE_ASK)
    grant = grant_for(next(s for s in offer.scopes if s.kind == "prefix"))
    assert offer.project_rule == "Shell(rm -rf build)"
    assert finder.covers(grant, shell("rm -rf build", workspace))
    for other in (
        "rm -rf build src",
        "rm -rf src",
        "rm -rf build/../..",
        "rm -rf /",
        "rm -rf build; rm -rf src",
    ):
        assert not finder.covers(grant, shell(other, workspace)), other
    quoted = finder.offer(shell("rm -rf 'my build'", workspace), MODE_ASK)
    assert quoted.project_rule == "Shell(rm -rf 'my build')"


@pytest.mark.parametrize(
    "command",
    ["rm -rf build && make", 'rm -rf "$OUT"', "rm -rf build/*", "FOO=1; rm -rf build", "rm -rf <(ls)"],
)
def test_destructive_lines_that_no_rule_pins_offer_only_this_exact_action(finder, workspace, command):
    offer = finder.offer(shell(command, workspace), MODE_ASK)
    assert [scope.kind for scope in offer.scopes] == ["exact"] and offer.project_rule is None


@pytest.mark.parametrize(
    ("spec", "command"),
    [
        ("git push:*", "git push --force origin main"),
        ("git push:*", "git push origin main"),
        ("git:*", "git push -f"),
        ("git:*", "git -c alias.p=push p --force"),
        ("git:*", "git reset --hard"),
        ("rm:*", "rm -rf src"),
        ("rm -rf build:*", "rm -rf build ../outside"),
        ("chmod:*", "chmod -R 777 ."),
        ("find:*", "find . -delete"),
        ("find . -name:*", "find . -name x -exec rm {} ;"),
        ("dd:*", "dd if=/dev/zero of=src/a.py"),
        ("kill:*", "kill -9 4242"),
        ("timeout:*", "timeout 5 rm -rf src"),
    ],
)
def test_a_prefix_grant_never_covers_a_destructive_line(finder, workspace, spec, command):
    """Grants given before (or restored from an older session) included."""
    assert not finder.covers(prefix_grant(spec), shell(command, workspace))
    assert not finder.covers(grant_for_rule(f"Shell({spec})"), shell(command, workspace))


def test_prefix_grants_still_cover_what_destroys_nothing(finder, workspace):
    assert finder.covers(prefix_grant("git commit:*"), shell("git commit -m x", workspace))
    assert finder.covers(prefix_grant("npm run test:*"), shell("npm run test -- -u", workspace))
