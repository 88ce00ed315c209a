"""End to end: ``seepient context show`` and ``run --skill`` through the real console script, with a temporary
HOME and SEEPIENT_HOME. No model is configured, so any attempt to call one would fail the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def _skill(base: Path, name: str, description: str, body: str = "") -> Path:
    path = base / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")
    return path


@pytest.fixture
def project(world):  # type: ignore[no-untyped-def]
    world.seepient_home.mkdir()
    (world.seepient_home / "AGENTS.md").write_text("User rule: answer briefly.\n")
    (world.seepient_home / "settings.json").write_text(json.dumps({"instructions": "Prefer small diffs."}))
    repo = world.workspace
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("Root rule: run make test.\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "AGENTS.md").write_text("Pkg rule: no new dependencies.\n")
    skills = repo / ".agents" / "skills"
    _skill(skills, "pdf-forms", "Fill PDF forms.", "PDF STEPS\n")
    _skill(skills, "deploy", "Deploy from the repository.")
    mine = _skill(world.seepient_home / "skills", "deploy", "Deploy with my pipeline.")
    broken = skills / "broken" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text("no front matter here\n")
    return {"pkg": repo / "pkg", "broken": broken, "mine": mine}


def test_context_show_json_lists_sections_sources_tokens_and_warnings(world, seepient, project):
    proc = seepient("context", "show", "--workspace", str(project["pkg"]), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    sections = doc["sections"]
    assert [s["id"] for s in sections] == [
        "identity",
        "environment",
        "rules",
        "rules-file",
        "rules-file",
        "rules-file",
        "instructions",
        "skills",
    ]
    assert [s["source"] for s in sections if s["id"] == "rules-file"] == [
        str(world.seepient_home / "AGENTS.md"),
        str(world.workspace / "AGENTS.md"),
        str(project["pkg"] / "AGENTS.md"),
    ]
    assert doc["total_tokens"] == sum(s["tokens"] for s in sections) > 0
    assert doc["prompt"] == "\n\n".join(s["text"] for s in sections)
    assert "Prefer small diffs." in doc["prompt"]
    assert "Pkg rule: no new dependencies." in doc["prompt"]
    # pkg/ is the working directory but not a repository itself: its skills come from the workspace given.
    assert doc["environment"]["git"]["root"] == str(world.workspace)
    assert doc["environment"]["working_directory"] == str(project["pkg"])


def test_context_show_reads_skills_of_the_workspace_and_reports_problems(world, seepient, project):
    proc = seepient("context", "show", "--workspace", str(world.workspace), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    skills = {s["name"]: s for s in doc["skills"]}
    assert set(skills) == {"pdf-forms", "deploy"}
    assert skills["deploy"]["path"] == str(project["mine"]) and skills["deploy"]["scope"] == "user"
    warnings = {w["source"]: w["message"] for w in doc["warnings"]}
    assert "has no YAML front matter" in warnings[str(project["broken"])]
    assert "shadowed by the user's skill" in warnings[str(world.workspace / ".agents/skills/deploy/SKILL.md")]
    assert "PDF STEPS" not in doc["prompt"]


def test_context_show_for_people_with_an_active_skill(world, seepient, project):
    proc = seepient("context", "show", "--workspace", str(world.workspace), "--skill", "pdf-forms")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"System prompt for {world.workspace}: ")
    assert f"── AGENTS.md (the project's rules) · {world.workspace / 'AGENTS.md'} · ~" in out
    assert "── Active skill: pdf-forms · " in out and "PDF STEPS" in out
    assert "seepient: warning: " in proc.stderr and str(project["broken"]) in proc.stderr


def test_bad_arguments_are_usage_errors(world, seepient, project):
    unknown = seepient("context", "show", "--workspace", str(world.workspace), "--skill", "nope")
    assert unknown.returncode == 2
    assert "no skill named 'nope'" in unknown.stderr and "pdf-forms" in unknown.stderr
    missing = seepient("context", "show", "--workspace", str(world.workspace / "missing"))
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


def test_run_with_skill_and_warnings(world, seepient, project):
    script = world.script([{"text": "Done."}])
    base = ("run", "hello", "--model", f"replay:{script}", "--workspace", str(world.workspace))
    ok = seepient(*base, "--skill", "pdf-forms")
    assert ok.returncode == 0, ok.stderr
    assert "Done." in ok.stdout
    assert f"seepient: warning: {project['broken']}: has no YAML front matter" in ok.stderr
    bad = seepient(*base, "--skill", "nope")
    assert bad.returncode == 2 and "no skill named 'nope'" in bad.stderr
