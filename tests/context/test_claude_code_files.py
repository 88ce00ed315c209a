"""Claude Code's ``CLAUDE.md`` and ``.claude/skills/``, read where ``AGENTS.md`` and ``.agents/skills/`` are
absent, under the same containment, guard and size limits as the originals."""

from __future__ import annotations

import os
from pathlib import Path

from seepient.context import system_prompt
from seepient.context.rules import discover_rules
from seepient.context.skills import discover_skills
from tests.context.conftest import write_skill_file


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def test_claude_md_stands_in_for_a_missing_agents_md_in_each_directory(tmp_path, seepient_home):
    repo = _repo(tmp_path)
    (repo / "CLAUDE.md").write_text("root: claude rule\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "AGENTS.md").write_text("pkg: agents rule\n")
    (repo / "pkg" / "CLAUDE.md").write_text("pkg: claude rule, not read\n")
    rules = discover_rules(repo / "pkg", seepient_home=seepient_home)
    assert [(r.label, r.text.strip()) for r in rules.files] == [
        ("CLAUDE.md", "root: claude rule"),
        ("pkg/AGENTS.md", "pkg: agents rule"),
    ]
    assert all(r.scope == "project" for r in rules.files) and rules.warnings == ()


def test_a_broken_agents_md_is_reported_not_replaced(tmp_path):
    repo = _repo(tmp_path)
    (repo / "AGENTS.md").symlink_to(repo / "missing.md")
    (repo / "CLAUDE.md").write_text("fallback\n")
    rules = discover_rules(repo, seepient_home=None)
    assert rules.files == ()
    assert [w.message for w in rules.warnings] == ["is a broken symbolic link; it was skipped"]


def test_claude_md_is_capped_like_agents_md(tmp_path):
    repo = _repo(tmp_path)
    (repo / "CLAUDE.md").write_text("x" * 500)
    (rule,) = discover_rules(repo, seepient_home=None, file_max_chars=100).files
    assert rule.truncated and rule.chars == 500 and "CLAUDE.md was cut here" in rule.text


def test_a_claude_md_linking_out_of_the_repository_is_not_read(tmp_path):
    """Attack: a cloned repository points its CLAUDE.md at the user's SSH key."""
    repo = _repo(tmp_path)
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY\n")
    (repo / "CLAUDE.md").symlink_to(secret)
    rules = discover_rules(repo, seepient_home=None)
    assert rules.files == ()
    assert "outside" in rules.warnings[0].message


def test_claude_skills_stand_in_where_agents_skills_are_absent(tmp_path, seepient_home):
    repo = _repo(tmp_path)
    write_skill_file(repo / ".claude" / "skills", "deploy", description="Deploy the root.")
    (repo / "pkg").mkdir()
    write_skill_file(repo / "pkg" / ".agents" / "skills", "lint", description="Lint pkg.")
    write_skill_file(repo / "pkg" / ".claude" / "skills", "ignored", description="Not read.")
    catalog = discover_skills(repo / "pkg", seepient_home=seepient_home)
    assert sorted(catalog.names()) == ["deploy", "lint"]
    assert catalog.require("deploy").path == repo / ".claude" / "skills" / "deploy" / "SKILL.md"
    assert catalog.require("deploy").scope == "workspace"


def test_a_users_skill_still_beats_a_claude_project_skill(tmp_path, seepient_home):
    repo = _repo(tmp_path)
    write_skill_file(repo / ".claude" / "skills", "deploy", description="The repository's deploy.")
    mine = write_skill_file(seepient_home / "skills", "deploy", description="My deploy.")
    catalog = discover_skills(repo, seepient_home=seepient_home)
    assert catalog.require("deploy").path == mine
    assert "shadowed by the user's skill" in catalog.warnings[0].message


def test_a_claude_folder_linking_out_of_the_project_gives_no_skills(tmp_path, seepient_home):
    """Attack: ``.claude`` is a link to a folder of skills elsewhere on the machine."""
    repo = _repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    write_skill_file(elsewhere / "skills", "leak", description="Reads secrets.", body="SECRET BODY")
    os.symlink(elsewhere, repo / ".claude")
    catalog = discover_skills(repo, seepient_home=seepient_home)
    assert len(catalog) == 0
    assert "outside the project" in catalog.warnings[0].message


def test_the_prompt_carries_claude_md_and_lists_claude_skills(tmp_path, seepient_home):
    repo = _repo(tmp_path)
    (repo / "CLAUDE.md").write_text("Always run make check.\n")
    write_skill_file(repo / ".claude" / "skills", "release-notes", description="Write release notes.")
    text = system_prompt(repo, seepient_home=seepient_home)
    assert "## CLAUDE.md (the project's rules)\nAlways run make check." in text
    assert "release-notes" in text
