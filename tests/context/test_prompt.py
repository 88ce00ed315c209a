"""The assembled system prompt: sections in order with their sources and token estimates, rules, settings
instructions, the skill catalogue and active skills."""

from __future__ import annotations

import json

from seepient.config import SeepientPaths, load_settings
from seepient.context.manager import ConversationContext
from seepient.context.prompt import CATALOG_MAX_CHARS, assemble_prompt, system_prompt
from seepient.context.tokens import TokenEstimator


def test_sections_in_order_with_sources_and_tokens(workspace, seepient_home, workspace_skill, user_skill):
    (seepient_home / "AGENTS.md").write_text("Always answer in English.\n")
    (workspace / "AGENTS.md").write_text("Run make lint before finishing.\n")
    workspace_skill("pdf-forms", description="Fill PDF forms.", body="Use scripts/fill.py.\n")
    user_skill("release-notes", description="Write release notes.")
    assembled = assemble_prompt(
        workspace,
        seepient_home=seepient_home,
        consent_mode="always-ask",
        sandboxed=True,
        instructions=["Prefer small commits.", "  "],
        environ={},
    )
    ids = [s.id for s in assembled.sections]
    assert ids == ["identity", "environment", "rules", "rules-file", "rules-file", "instructions", "skills"]
    by_id = {s.id: s for s in assembled.sections}
    rule_files = [s for s in assembled.sections if s.id == "rules-file"]
    assert [s.source for s in rule_files] == [str(seepient_home / "AGENTS.md"), str(workspace / "AGENTS.md")]
    assert "Always answer in English." in rule_files[0].text and "(the user's rules)" in rule_files[0].text
    assert rule_files[1].text == "## AGENTS.md (the project's rules)\nRun make lint before finishing."
    assert by_id["instructions"].text.endswith("Prefer small commits.")
    assert by_id["instructions"].source == "settings: instructions"
    assert "- pdf-forms: Fill PDF forms." in by_id["skills"].text
    assert "- release-notes: Write release notes." in by_id["skills"].text
    assert "Use scripts/fill.py." not in assembled.text  # instructions only once the skill is active
    assert assembled.text == "\n\n".join(s.text for s in assembled.sections)
    estimator = TokenEstimator()
    assert all(s.tokens == estimator.text(s.text) > 0 for s in assembled.sections)
    assert assembled.tokens == sum(s.tokens for s in assembled.sections)
    data = json.loads(json.dumps(assembled.as_dict()))
    assert [s["id"] for s in data["sections"]] == ids
    assert {s["name"] for s in data["skills"]} == {"pdf-forms", "release-notes"}


def test_without_rules_or_skills_the_prompt_is_identity_and_environment(workspace):
    assembled = assemble_prompt(workspace, seepient_home=None, environ={})
    assert [s.id for s in assembled.sections] == ["identity", "environment"]
    assert "sandbox with no network" in assembled.text
    assert "WITHOUT a sandbox" in system_prompt(workspace, sandboxed=False)


def test_a_big_catalogue_lists_the_rest_by_name(workspace, seepient_home, workspace_skill):
    for number in range(120):
        workspace_skill(f"skill-{number:03d}", description="d" * 200)
    assembled = assemble_prompt(workspace, seepient_home=seepient_home, environ={})
    catalogue = next(s for s in assembled.sections if s.id == "skills")
    assert len(catalogue.text) < CATALOG_MAX_CHARS + 2_000
    assert "listed by name only" in catalogue.text and "skill-119" in catalogue.text


def test_settings_instructions_come_from_user_and_project_settings(workspace, seepient_home):
    paths = SeepientPaths(home=seepient_home)
    paths.user_settings.write_text(json.dumps({"instructions": "Use British spelling."}))
    settings = load_settings(workspace, paths=paths)
    context = ConversationContext.open(
        workspace,
        settings=settings,
        seepient_home=seepient_home,
        consent_mode="ask-untrusted",
        sandboxed=True,
    )
    assert "# Instructions from the user's settings\nUse British spelling." in context.system_prompt()


def test_named_and_matched_skills_become_active_for_the_session(workspace, seepient_home, workspace_skill):
    workspace_skill("pdf-forms", description="Fill PDF forms and merge PDF documents.", body="PDF STEPS\n")
    workspace_skill(
        "release-notes", description="Write release notes and changelog entries.", body="NOTES STEPS\n"
    )
    settings = load_settings(workspace, paths=SeepientPaths(home=seepient_home))
    context = ConversationContext.open(
        workspace,
        settings=settings,
        seepient_home=seepient_home,
        consent_mode="ask-untrusted",
        sandboxed=True,
        skills=["release-notes"],
    )
    assert context.active_skills == ["release-notes"]
    prompt = context.system_prompt()
    assert "# Active skill: release-notes" in prompt and "named by the user (--skill)" in prompt
    assert "NOTES STEPS" in prompt and "PDF STEPS" not in prompt
    unrelated = context.start_turn("rename a variable")
    assert unrelated == prompt
    matched = context.start_turn("fill the form in application.pdf")
    assert context.active_skills == ["release-notes", "pdf-forms"]
    assert "PDF STEPS" in matched and "matched to the request" in matched
    assert context.start_turn("thanks") == matched  # still active a turn later
    assert [s.id for s in context.sections()][-2:] == ["active-skill", "active-skill"]
