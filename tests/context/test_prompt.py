"""The system prompt: environment facts and the project's AGENTS.md rules."""

from __future__ import annotations

from seepient.context.prompt import system_prompt


def test_includes_workspace_and_sandbox_state(tmp_path):
    text = system_prompt(tmp_path, sandboxed=True)
    assert str(tmp_path) in text and "sandbox with no network" in text
    assert "WITHOUT a sandbox" in system_prompt(tmp_path, sandboxed=False)


def test_includes_agents_md_and_caps_its_size(tmp_path):
    (tmp_path / "AGENTS.md").write_text("- always run make lint\n" + "x" * 30_000)
    text = system_prompt(tmp_path)
    assert "always run make lint" in text
    assert "cut at 20,000 characters" in text
    assert len(text) < 22_000


def test_without_agents_md(tmp_path):
    assert "Project rules" not in system_prompt(tmp_path)
