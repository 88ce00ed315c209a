"""End to end: what the real ``seepient`` command says about settings keys it does not read, and Claude Code's
rule names and files in a real run."""

from __future__ import annotations

import json

from tests.e2e.conftest import json_events


def _user_settings(world, data: object) -> None:
    world.seepient_home.mkdir(parents=True, exist_ok=True)
    (world.seepient_home / "settings.json").write_text(json.dumps(data))


def test_a_misspelt_key_is_a_warning_naming_file_key_and_meaning_and_the_run_goes_on(world, seepient):
    _user_settings(world, {"runtime": {"maxStep": 3}})
    script = world.script([{"text": "Hello."}])
    proc = seepient("run", "hi", "--model", f"replay:{script}", "--workspace", str(world.workspace))
    assert proc.returncode == 0, proc.stderr
    settings = world.seepient_home / "settings.json"
    assert (
        f"seepient: warning: {settings}: runtime.maxStep: unknown key, ignored; did you mean 'runtime.maxSteps'?"
        in proc.stderr
    )
    assert "Hello." in proc.stdout


def test_a_misspelt_permissions_key_stops_the_run_before_anything_happens(world, seepient):
    _user_settings(world, {"permisions": {"deny": ["Read(.env)"]}})
    script = world.script([{"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}}]}])
    (world.workspace / ".env").write_text("TOKEN=1\n")
    proc = seepient("run", "read", "-y", "--model", f"replay:{script}", "--workspace", str(world.workspace))
    assert proc.returncode == 2
    assert "permisions: unknown key; did you mean 'permissions'?" in proc.stderr
    assert world.audit_records() == []


def test_claude_code_rule_names_decide_a_real_run(world, seepient):
    """``Bash(git status:*)`` allows what ``Shell(git status:*)`` allows, and ``Read(.env)`` in deny still
    refuses, with the rule named as the user wrote it."""
    _user_settings(world, {"permissions": {"allow": ["Bash(echo hi:*)"], "deny": ["Read(./.env)"]}})
    (world.workspace / ".env").write_text("TOKEN=1\n")
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "shell", "arguments": {"command": "echo hi there"}},
                    {"name": "read_file", "arguments": {"path": ".env"}},
                ]
            },
            {"text": "Done."},
        ]
    )
    proc = seepient("run", "go", "--model", f"replay:{script}", "--workspace", str(world.workspace), "--json")
    events = json_events(proc.stdout)
    results = {e["tool"]: e for e in events if e["type"] == "tool_result"}
    assert results["shell"]["status"] == "ok", proc.stderr
    assert "hi there" in json.dumps(results["shell"])
    assert results["read_file"]["status"] != "ok"
    assert "Read(./.env)" in json.dumps(results["read_file"])


def test_context_show_reads_claude_md_and_claude_skills_where_agents_files_are_absent(world, seepient):
    (world.workspace / ".git").mkdir()
    (world.workspace / "CLAUDE.md").write_text("Run make check.\n")
    skill = world.workspace / ".claude" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Deploy it.\n---\nSTEPS\n")
    proc = seepient("context", "show", "--workspace", str(world.workspace), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rules = [s for s in doc["sections"] if s["id"] == "rules-file"]
    assert [s["source"] for s in rules] == [str(world.workspace / "CLAUDE.md")]
    assert [(s["name"], s["path"]) for s in doc["skills"]] == [("deploy", str(skill))]
    (world.workspace / "AGENTS.md").write_text("Agents rule.\n")
    doc = json.loads(seepient("context", "show", "--workspace", str(world.workspace), "--json").stdout)
    rules = [s for s in doc["sections"] if s["id"] == "rules-file"]
    assert [s["source"] for s in rules] == [str(world.workspace / "AGENTS.md")]
