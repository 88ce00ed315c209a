"""Attacks through the edit tools on git's control files below the top level (red team, after issue 15).

The path guard refused ``.git/config``, ``.git/hooks`` and the other control files of the workspace's own
repository, and the control guard undoes what a jailed command plants in any repository. But the edit tools
commit on the host, outside any jail and without the control guard: in autonomous-trusted mode (or under an
``Edit(**)`` rule) ``write_file`` could put ``core.fsmonitor`` into a nested checkout's ``sub/.git/config``, a
submodule's ``.git/modules/NAME/config``, a hook into a linked worktree's git directory, or a ``config`` into a
bare repository git discovers on ``cd``, and a person's next ``git status`` there ran it. Each is now refused
in every mode, in any letter case, through a link, and for a bare repository built in either order.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from seepient.protocol import Decision

ALLOW, DENY = Decision.ALLOW, Decision.DENY
PLANTED = "[core]\n\tfsmonitor = touch PWNED; false\n"


def _repositories(workspace: Path) -> None:
    """A nested checkout, a submodule's git directory, a linked worktree's and a bare repository."""
    (workspace / ".git" / "modules" / "lib" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "modules" / "lib" / "config").write_text("[core]\n")
    (workspace / ".git" / "worktrees" / "w").mkdir(parents=True)
    (workspace / "sub" / ".git" / "hooks").mkdir(parents=True)
    (workspace / "sub" / ".git" / "config").write_text("[core]\n")
    for name in ("objects", "refs"):
        (workspace / "vendor" / "bare.git" / name).mkdir(parents=True)
    (workspace / "vendor" / "bare.git" / "HEAD").write_text("ref: refs/heads/main\n")


NESTED_CONTROL = [
    "sub/.git/config",
    "sub/.git/config.worktree",
    "sub/.git/hooks/pre-commit",
    "sub/.git/hooks/fsmonitor-watchman",
    "sub/.git/info/attributes",
    "sub/.git/commondir",
    "sub/.git/objects/info/alternates",
    "sub/.GIT/Config",
    "sub/deeper/.git",
    "other/.git",
    ".git/modules/lib/config",
    ".git/modules/lib/hooks/post-checkout",
    ".git/modules/lib/modules/inner/config",
    ".git/worktrees/w/hooks/pre-commit",
    ".git/worktrees/w/config",
    "vendor/bare.git/config",
    "vendor/bare.git/hooks/post-checkout",
    "vendor/bare.git/info/attributes",
]


@pytest.mark.parametrize("path", NESTED_CONTROL)
@pytest.mark.parametrize("mode", ["ask-untrusted", "autonomous-trusted"])
def test_the_edit_tools_never_write_a_nested_repositorys_control_files(
    layout, actions, mode: str, path: str
) -> None:
    _repositories(layout.workspace)
    engine = layout.engine(mode, allow=["Edit(**)", "Write(**)"])
    for tool in ("write_file", "edit_file"):
        verdict = engine.evaluate(actions.edit(path, new_content=PLANTED, tool=tool))
        assert (verdict.decision, verdict.rule) == (DENY, "path_guard:sensitive"), (path, verdict)
    verdict = engine.evaluate(actions.shell(f"echo x > {path}"))
    assert verdict.decision is DENY, (path, verdict)


def test_a_link_to_a_nested_repositorys_config_is_refused_too(layout, actions) -> None:
    _repositories(layout.workspace)
    (layout.workspace / "notes.txt").symlink_to("sub/.git/config")
    engine = layout.engine("autonomous-trusted", allow=["Edit(**)"])
    verdict = engine.evaluate(actions.edit("notes.txt", new_content=PLANTED))
    assert (verdict.decision, verdict.rule) == (DENY, "path_guard:sensitive"), verdict


@pytest.mark.parametrize("first", ["config", "HEAD"])
def test_a_bare_repository_cannot_be_built_file_by_file(layout, actions, first: str) -> None:
    """config then HEAD, or HEAD then config: the second write is what makes git honour the config."""
    engine = layout.engine("autonomous-trusted")
    (layout.workspace / "pkg").mkdir()
    assert engine.evaluate(actions.edit(f"pkg/{first}", new_content="x\n")).decision is ALLOW
    (layout.workspace / "pkg" / first).write_text(PLANTED if first == "config" else "ref: refs/heads/main\n")
    second = "HEAD" if first == "config" else "config"
    assert "git" in engine.evaluate(actions.edit(f"pkg/{second}", new_content="x\n")).reasons[0]
    verdict = engine.evaluate(actions.edit(f"pkg/{second}", new_content="x\n"))
    assert (verdict.decision, verdict.rule) == (DENY, "path_guard:sensitive"), verdict


@pytest.mark.parametrize(
    "path",
    [
        "src/config",
        "config/settings.toml",
        "app/hooks.py",
        "docs/git/config.md",
        ".gitignore",
        ".github/workflows/ci.yml",
        ".git/HEAD",
        "sub/README.md",
        "vendor/bare.git/description",
    ],
)
def test_ordinary_files_named_like_git_files_stay_writable(layout, actions, path: str) -> None:
    _repositories(layout.workspace)
    engine = layout.engine("autonomous-trusted")
    (layout.workspace / ".git" / "config").write_text("[core]\n")
    assert engine.evaluate(actions.edit(path, new_content="x\n")).decision is ALLOW, path


@pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true",
    reason="needs git (every machine CI uses has it, so CI runs this)",
)
def test_what_is_refused_is_what_a_persons_git_would_run(tmp_path: Path) -> None:
    """The oracle for the attack: the config the edit tools could write runs when a person uses git there."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    repo = tmp_path / "ws" / "sub"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + PLANTED)
    subprocess.run(["git", "status"], cwd=repo, env=env, capture_output=True, check=False)
    assert (repo / "PWNED").exists()
