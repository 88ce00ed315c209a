"""``seepient doctor`` and ``seepient init`` through the real command: the doctor's exit code and JSON, keys
never printed, worker mode as root; init's write of AGENTS.md asking on a terminal and landing when approved."""

from __future__ import annotations

import json
import os

import pytest

from tests.e2e.conftest import SECRET_MARKER, json_events
from tests.e2e.test_cli_terminal import Terminal

_AGENTS = "# calc\n\nRun the tests with `python -m pytest`.\n"


def _user_settings(world, settings) -> None:  # type: ignore[no-untyped-def]
    world.seepient_home.mkdir(parents=True, exist_ok=True)
    (world.seepient_home / "settings.json").write_text(json.dumps(settings))


def test_doctor_reports_and_exits_by_what_it_found(world, seepient):
    _user_settings(world, {"models": {"default": "openai:gpt-4.1"}})
    healthy = seepient("doctor", "--json")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    report = json.loads(healthy.stdout)
    assert report["ok"] and report["workspace"] == str(world.workspace.resolve())
    areas = {finding["area"] for finding in report["findings"]}
    assert {"sandbox", "docker", "models", "settings", "trust", "audit"} <= areas
    assert SECRET_MARKER not in healthy.stdout + healthy.stderr
    text = seepient("doctor")
    assert text.returncode == 0 and "OPENAI_API_KEY" in text.stdout and SECRET_MARKER not in text.stdout
    assert "no problems found" in text.stdout
    env = {k: v for k, v in world.env.items() if k != "OPENAI_API_KEY"}
    missing = seepient("doctor", env=env)
    assert missing.returncode == 1
    assert "✗ models" in missing.stdout and "fix: export OPENAI_API_KEY=" in missing.stdout
    assert "1 problem(s) found" in missing.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="worker mode as root")
def test_doctor_as_root_checks_who_owns_the_leased_workspaces(world, seepient):
    leased = world.home / "tenants"
    leased.mkdir()
    certs = world.home / "certs"
    done = seepient("certs", "init", str(certs), "--workspace-root", str(leased))
    assert done.returncode == 0, done.stderr
    scheduler = str(certs / "scheduler.json")
    root_owned = seepient("doctor", "--no-mcp", "--scheduler-config", scheduler)
    assert root_owned.returncode == 1
    assert f"leased workspace {leased} belongs to root" in root_owned.stdout
    assert f"chown -R 10001:10001 {leased}" in root_owned.stdout
    os.chown(leased, 10001, 10001)
    owned = seepient("doctor", "--no-mcp", "--json", "--scheduler-config", scheduler)
    worker = [
        f
        for f in json.loads(owned.stdout)["findings"]
        if f["area"] == "worker" and str(leased) in f["detail"]
    ]
    assert worker[0]["status"] == "ok"


def _init_script(world):  # type: ignore[no-untyped-def]
    return world.script(
        [
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "AGENTS.md", "content": _AGENTS}}]},
            {"text": "Wrote AGENTS.md."},
        ]
    )


def test_init_asks_before_writing_agents_md_and_writes_it_when_approved(world):
    (world.workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    script = _init_script(world)
    term = Terminal(["init", "--model", f"replay:{script}", "--json"], world.env, world.workspace)
    screen = term.expect("Approve?")
    assert "AGENTS.md" in screen and "Run the tests with" in screen  # the diff is shown before the question
    assert not (world.workspace / "AGENTS.md").exists()
    term.send("y\n")
    code, out = term.finish()
    assert code == 0
    assert (world.workspace / "AGENTS.md").read_text() == _AGENTS
    started = [e for e in json_events(out) if e["type"] == "turn_started"]
    assert "AGENTS.md" in started[0]["prompt"] and "Study this project" in started[0]["prompt"]


def test_init_without_anyone_to_ask_writes_nothing(world, seepient):
    script = _init_script(world)
    result = seepient("init", "--model", f"replay:{script}")
    assert not (world.workspace / "AGENTS.md").exists()
    assert "AGENTS.md was not written" in result.stderr
    approved = seepient("init", "-y", "--model", f"replay:{script}")
    assert approved.returncode == 0, approved.stderr
    assert (world.workspace / "AGENTS.md").read_text() == _AGENTS
    assert f"wrote {world.workspace}/AGENTS.md" in approved.stderr
