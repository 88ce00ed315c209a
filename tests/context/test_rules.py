"""AGENTS.md discovery: home file first, then repository root down to the working directory, capped, and
unreadable or escaping files reported as warnings instead of failing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seepient.context.rules import discover_rules, find_repository_root, guard_read_check
from seepient.policy.paths import PathGuard


def _nested_repo(tmp_path: Path) -> tuple[Path, Path]:
    """repo/.git, repo/AGENTS.md, repo/svc/AGENTS.md, repo/svc/api/AGENTS.md; the workspace is repo/svc/api."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("root rule: use tabs\n")
    (repo / "svc").mkdir()
    (repo / "svc" / "AGENTS.md").write_text("svc rule: use spaces\n")
    (repo / "svc" / "api").mkdir()
    (repo / "svc" / "api" / "AGENTS.md").write_text("api rule: run make api-test\n")
    (repo / "other").mkdir()
    (repo / "other" / "AGENTS.md").write_text("unrelated sibling rule\n")
    return repo, repo / "svc" / "api"


def test_nested_tree_is_read_from_home_then_root_down_to_the_working_directory(tmp_path, seepient_home):
    repo, workspace = _nested_repo(tmp_path)
    (seepient_home / "AGENTS.md").write_text("user rule: answer in English\n")
    rules = discover_rules(workspace, seepient_home=seepient_home)
    assert rules.repository_root == repo
    assert [r.label for r in rules.files] == [
        str(seepient_home / "AGENTS.md"),
        "AGENTS.md",
        "svc/AGENTS.md",
        "svc/api/AGENTS.md",
    ]
    assert rules.files[0].scope == "user" and rules.files[0].path == seepient_home / "AGENTS.md"
    assert [r.text.strip() for r in rules.files] == [
        "user rule: answer in English",
        "root rule: use tabs",
        "svc rule: use spaces",
        "api rule: run make api-test",
    ]
    assert all(r.scope == "project" for r in rules.files[1:])
    assert not any("unrelated" in r.text for r in rules.files)
    assert rules.warnings == ()


def test_working_directory_below_the_workspace_adds_nearer_files(tmp_path):
    repo, workspace = _nested_repo(tmp_path)
    deeper = workspace / "handlers"
    deeper.mkdir()
    (deeper / "AGENTS.md").write_text("handler rule\n")
    rules = discover_rules(workspace, seepient_home=None, cwd=deeper)
    assert [r.label for r in rules.files][-1] == "svc/api/handlers/AGENTS.md"
    outside = discover_rules(workspace, seepient_home=None, cwd=tmp_path)
    assert [r.label for r in outside.files][-1] == "svc/api/AGENTS.md"


def test_without_git_only_the_workspace_file_counts(tmp_path):
    parent = tmp_path / "parent"
    workspace = parent / "ws"
    workspace.mkdir(parents=True)
    (parent / "AGENTS.md").write_text("parent rule\n")
    (workspace / "AGENTS.md").write_text("workspace rule\n")
    rules = discover_rules(workspace, seepient_home=None)
    assert rules.repository_root == workspace
    assert [r.text.strip() for r in rules.files] == ["workspace rule"]


def test_a_git_file_marks_a_worktree_or_submodule_root(tmp_path):
    root = tmp_path / "wt"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    assert find_repository_root(root / "pkg") == root


def test_big_files_are_cut_with_a_notice_and_the_total_drops_the_farthest(tmp_path):
    repo, workspace = _nested_repo(tmp_path)
    (repo / "AGENTS.md").write_text("R" * 5000)
    rules = discover_rules(workspace, seepient_home=None, file_max_chars=1000)
    root_rule = rules.files[0]
    assert root_rule.truncated and root_rule.chars == 5000
    assert root_rule.text.startswith("R" * 1000)
    assert "cut here: it has 5,000 characters and only the first 1,000 are shown" in root_rule.text
    tight = discover_rules(workspace, seepient_home=None, file_max_chars=1000, total_max_chars=200)
    assert [r.label for r in tight.files] == ["svc/AGENTS.md", "svc/api/AGENTS.md"]
    assert any("left out" in w.message and w.source == str(repo / "AGENTS.md") for w in tight.warnings)


def test_unreadable_entries_become_one_warning_each_and_never_fail(tmp_path):
    repo, workspace = _nested_repo(tmp_path)
    (repo / "svc" / "AGENTS.md").unlink()
    (repo / "svc" / "AGENTS.md").mkdir()  # a directory where a file was expected
    (repo / "AGENTS.md").unlink()
    os.mkfifo(repo / "AGENTS.md")  # would hang a plain open()
    (workspace / "AGENTS.md").unlink()
    (workspace / "AGENTS.md").symlink_to(workspace / "missing.md")
    rules = discover_rules(workspace, seepient_home=None)
    assert rules.files == ()
    by_source = {w.source: w.message for w in rules.warnings}
    assert len(rules.warnings) == 3
    assert "not a regular file" in by_source[str(repo / "AGENTS.md")]
    assert "directory" in by_source[str(repo / "svc" / "AGENTS.md")]
    assert "broken symbolic link" in by_source[str(workspace / "AGENTS.md")]


def test_invalid_utf8_is_kept_with_replacement_and_a_warning(workspace):
    (workspace / "AGENTS.md").write_bytes(b"keep this rule \xff\xfe\n")
    rules = discover_rules(workspace, seepient_home=None)
    assert "keep this rule" in rules.files[0].text
    assert [w.message for w in rules.warnings] == ["is not valid UTF-8; undecodable bytes were replaced"]


def test_a_symlink_out_of_the_repository_is_not_read(tmp_path):
    """Attack: a cloned repository's AGENTS.md points at the user's private key."""
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN PRIVATE KEY----- SECRET\n")
    repo, workspace = _nested_repo(tmp_path)
    (workspace / "AGENTS.md").unlink()
    (workspace / "AGENTS.md").symlink_to(secret)
    rules = discover_rules(workspace, seepient_home=None)
    assert not any("SECRET" in r.text for r in rules.files)
    assert any("outside" in w.message for w in rules.warnings)


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md"])
def test_a_symlink_inside_the_repository_to_a_guarded_place_is_refused(tmp_path, name):
    """Attack: the repository root is the home directory (a dotfiles repo), so 'inside' is not enough; Claude
    Code's CLAUDE.md, read where there is no AGENTS.md, is held to the same check."""
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("SECRET KEY\n")
    workspace = home / "project"
    workspace.mkdir()
    (workspace / name).symlink_to(home / ".ssh" / "id_ed25519")
    check = guard_read_check(PathGuard(workspace, seepient_home=tmp_path / "sh", home=home))
    rules = discover_rules(workspace, seepient_home=None, read_check=check)
    assert rules.files == ()
    assert "refused" in rules.warnings[0].message
    # A symlink to an ordinary file inside the repository is fine.
    (home / "shared-rules.md").write_text("shared rule\n")
    (workspace / name).unlink()
    (workspace / name).symlink_to(home / "shared-rules.md")
    assert [r.text for r in discover_rules(workspace, seepient_home=None, read_check=check).files] == [
        "shared rule\n"
    ]
