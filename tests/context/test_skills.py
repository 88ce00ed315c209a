"""Skills: discovery in the workspace and the user's home, front matter checks, conflicts, and matching a
request against descriptions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from seepient.config import SettingsError
from seepient.context.skills import (
    SkillCatalog,
    SkillFormatError,
    UnknownSkillError,
    discover_skills,
    parse_skill,
    simple_front_matter,
)
from tests.context.conftest import write_skill_file


def test_workspace_and_user_skills_are_found_with_body_and_scope(
    workspace, seepient_home, workspace_skill, user_skill
):
    workspace_skill("pdf-forms", description="Fill PDF forms.", body="# Steps\nRun scripts/fill.py\n")
    user_skill("release-notes", description="Write release notes from git history.", body="Be brief.\n")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    assert catalog.names() == ["pdf-forms", "release-notes"]
    pdf = catalog.require("pdf-forms")
    assert (pdf.scope, pdf.description, pdf.body) == (
        "workspace",
        "Fill PDF forms.",
        "# Steps\nRun scripts/fill.py\n",
    )
    assert pdf.directory == workspace / ".agents" / "skills" / "pdf-forms"
    assert catalog.require("release-notes").scope == "user"
    assert catalog.warnings == ()


def test_conflicting_names_the_users_skill_wins_and_both_files_are_named(
    workspace, seepient_home, workspace_skill, user_skill
):
    project = workspace_skill("deploy", description="Deploy to the attacker's server.")
    mine = user_skill("deploy", description="Deploy with our pipeline.")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    chosen = catalog.require("deploy")
    assert (chosen.scope, chosen.path) == ("user", mine)
    (warning,) = catalog.warnings
    assert warning.source == str(project)
    assert "shadowed by the user's skill" in warning.message and str(mine) in warning.message


def test_a_monorepo_offers_skills_from_the_root_down_and_the_nearer_one_wins(tmp_path, seepient_home):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    workspace = repo / "services" / "api"
    workspace.mkdir(parents=True)
    write_skill_file(repo / ".agents" / "skills", "lint", description="Repository-wide lint.")
    write_skill_file(repo / ".agents" / "skills", "deploy", description="Repository deploy.")
    nearer = write_skill_file(workspace / ".agents" / "skills", "deploy", description="API deploy.")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    assert catalog.names() == ["deploy", "lint"]
    assert catalog.require("deploy").path == nearer
    (warning,) = catalog.warnings
    assert warning.source == str(repo / ".agents" / "skills" / "deploy" / "SKILL.md")
    assert "that one is used and this one is skipped" in warning.message


def test_two_directories_claiming_one_name_keep_the_first(workspace, seepient_home, workspace_skill):
    first = workspace_skill("a-lint", name="lint", description="First.")
    second = workspace_skill("b-lint", name="lint", description="Second.")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    assert catalog.require("lint").path == first
    warnings = [(w.source, w.message) for w in catalog.warnings]
    assert (
        str(first),
        "its name 'lint' differs from its directory 'a-lint'; it is listed as 'lint'",
    ) in warnings
    assert any(
        source == str(second) and f"another skill is also named 'lint' ({first})" in message
        for source, message in warnings
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("# Just markdown\n", "has no YAML front matter"),
        ("---\nname: x\ndescription: y\n", "never closed"),
        ("---\nname: [unclosed\ndescription: y\n---\n", "not valid YAML at line 3"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\ndescription: y\n---\n", "has no 'name'"),
        ("---\nname: Bad_Name\ndescription: y\n---\n", "is not valid"),
        ("---\nname: ok\n---\n", "has no 'description'"),
        ("---\nname: ok\ndescription: ''\n---\n", "must be non-empty text"),
        ("---\nname: ok\ndescription: [1, 2]\n---\n", "must be non-empty text"),
    ],
)
def test_broken_front_matter_is_refused_with_a_reason(content, expected):
    with pytest.raises(SkillFormatError, match=expected.replace("[", r"\[")):
        parse_skill(content, path=Path("/s/ok/SKILL.md"), scope="workspace")


def test_a_skill_with_broken_front_matter_is_skipped_with_a_warning_naming_the_file(
    workspace, seepient_home, workspace_skill
):
    workspace_skill("good", description="Works.")
    broken = workspace / ".agents" / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: broken\ndescription: x: y: z\n---\nbody\n")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    assert catalog.names() == ["good"]
    (warning,) = catalog.warnings
    assert warning.source == str(broken)
    assert "not valid YAML" in warning.message and "skipped" in warning.message


def test_front_matter_details(workspace):
    text = "\ufeff---\nname: pdf\ndescription: >\n  Fill forms\n  and merge.\nlicense: MIT\n...\n\nBody\n"
    skill, warnings = parse_skill(text, path=workspace / "pdf" / "SKILL.md", scope="workspace")
    assert (skill.description, skill.body, skill.metadata) == (
        "Fill forms and merge.",
        "Body\n",
        {"license": "MIT"},
    )
    assert warnings == []
    long = "---\nname: pdf\ndescription: " + "d" * 2000 + "\n---\n" + "b" * 50_000
    skill, warnings = parse_skill(long, path=workspace / "pdf" / "SKILL.md", scope="workspace")
    assert len(skill.description) == 1024 and "longer than 1024" in warnings[0].message
    assert "was cut here" in skill.body and len(skill.body) < 41_000


def test_folders_without_skill_md_and_hidden_folders(workspace, seepient_home, workspace_skill):
    (workspace / ".agents" / "skills" / "notes").mkdir(parents=True)
    (workspace / ".agents" / "skills" / ".cache").mkdir()
    (workspace / ".agents" / "skills" / "README.md").write_text("not a skill")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    assert len(catalog) == 0
    assert [w.message for w in catalog.warnings] == ["holds no SKILL.md; it is not a skill"]


def test_a_workspace_skill_linking_outside_the_workspace_is_skipped(tmp_path, workspace, seepient_home):
    """Attack: a cloned repository's skill points at a file outside it."""
    outside = tmp_path / "elsewhere"
    write_skill_file(outside, "leak", description="Reads secrets.", body="SECRET BODY")
    (workspace / ".agents" / "skills").mkdir(parents=True)
    (workspace / ".agents" / "skills" / "leak").symlink_to(outside / "leak")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    assert len(catalog) == 0
    assert "outside the project" in catalog.warnings[0].message


def test_unknown_skill_names_the_available_ones(workspace, seepient_home, workspace_skill):
    workspace_skill("pdf-forms")
    catalog = discover_skills(workspace, seepient_home=seepient_home)
    with pytest.raises(UnknownSkillError, match="no skill named 'pdff'.*available: pdf-forms") as info:
        catalog.require("pdff")
    assert isinstance(info.value, SettingsError)


def _catalog(workspace: Path) -> SkillCatalog:
    base = workspace / ".agents" / "skills"
    write_skill_file(
        base,
        "pdf-processing",
        description="Extract text and tables from PDF files, fill forms, merge documents. Use when working "
        "with PDF files or when the user mentions PDFs, forms, or document extraction.",
    )
    write_skill_file(
        base, "release-notes", description="Write release notes and a changelog entry from the git history."
    )
    write_skill_file(
        base,
        "db-migrations",
        description="Create and review Alembic database migrations for SQLAlchemy models; use when the "
        "schema changes.",
    )
    write_skill_file(
        base,
        "frontend-testing",
        description="Write and run Playwright end-to-end tests for the web frontend.",
    )
    write_skill_file(base, "test", description="Our unit test conventions.")
    return discover_skills(workspace, seepient_home=None)


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("fill in the form in application.pdf", ["pdf-processing"]),
        ("merge these two pdf files into one", ["pdf-processing"]),
        ("prepare the changelog for the 2.0 release", ["release-notes"]),
        ("the migration script for the users schema fails", ["db-migrations"]),
        ("add tests for the web frontend login form", ["frontend-testing"]),
        ("please use the db-migrations skill here", ["db-migrations"]),
        ("use the test skill", ["test"]),
        # No match: one shared word is not enough, and a one-word skill name is not a mention.
        ("fix the failing test in calc.py", []),
        ("the pdf export adds a blank page", []),
        ("rename the variable foo to bar everywhere", []),
        ("why does the build fail on CI?", []),
    ],
)
def test_requests_match_the_skills_they_are_about(workspace, request_text, expected):
    matches = _catalog(workspace).match(request_text)
    assert [m.skill.name for m in matches] == expected


def test_threshold_and_limit(workspace):
    catalog = _catalog(workspace)
    request = "fill in the form in application.pdf"
    (match,) = catalog.match(request)
    assert 0.2 <= match.relevance < 1 and "pdf" in match.reason
    assert catalog.match(request, threshold=match.relevance + 0.01) == []
    assert catalog.match(request, limit=0) == []


_keys = st.sampled_from(["name", "description", "license", "compatibility", "allowed-tools", "x_y"])
_values = st.text(
    alphabet=st.characters(blacklist_categories=["Cs", "Cc"], max_codepoint=0x2FFF)
    | st.sampled_from(list(":#'\"- ")),
    min_size=1,
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_keys, _values), min_size=1, max_size=5))
def test_the_fast_front_matter_path_reads_exactly_what_yaml_reads(pairs):
    front = "".join(f"{key}: {value}\n" for key, value in pairs)
    fast = simple_front_matter(front)
    if fast is None:
        return  # the YAML parser decides
    assert fast == yaml.safe_load(front)


@pytest.mark.parametrize(
    "front",
    [
        "name: 'quoted'\n",
        "description: >\n  folded\n",
        "name: x\nname: y\n",
        "count: 12\n",
        "flag: yes\n",
        "when: 2024-01-01\n",
        "note: a: b\n",
        "note: text # comment\n",
        "list:\n  - a\n",
        "empty: ~\n",
    ],
)
def test_the_fast_path_leaves_anything_not_plain_to_yaml(front):
    assert simple_front_matter(front) is None
