"""The CI recipe in ``docs/ci.md`` is real: its workflow parses, and its ``run`` steps, run as GitHub Actions runs
them (``bash -e``, ``$GITHUB_OUTPUT``, the job's env), give the exit codes the page promises against a replay
model: 0 when the agent finished, 5 when it had to refuse an action that needed approval."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

import yaml

from tests.conftest import BIN, REPO


def _workflow() -> dict[str, Any]:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return yaml.safe_load(block)


def _local_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps that run our commands: not the marketplace actions, not the installation (the venv has it)."""
    return [s for s in job["steps"] if "run" in s and not s.get("name", "").startswith("Install")]


def _run_job(world, job: dict[str, Any], model: str, prompt: str) -> tuple[list[int], dict[str, str]]:
    output = world.home / "github-output"
    output.write_text("")
    env = {k: v for k, v in job["env"].items() if "${{" not in str(v)}
    env.update(world.env)
    env.update(
        {
            "PATH": f"{BIN}{os.pathsep}{world.env['PATH']}",
            "SEEPIENT_MODEL": model,
            "PROMPT": prompt,
            "GITHUB_OUTPUT": str(output),
        }
    )
    codes = []
    failed = False
    for step in _local_steps(job):
        if failed and step.get("if") != "always()":
            continue
        script = world.home / "step.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "-e", str(script)],
            cwd=world.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        codes.append(done.returncode)
        failed = failed or done.returncode != 0
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return codes, outputs


def test_the_workflow_parses_and_names_what_it_promises():
    workflow = _workflow()
    job = workflow["jobs"]["agent"]
    names = [s.get("name") or s.get("uses") for s in job["steps"]]
    assert "Run the agent" in names and "Verify the audit log" in names
    agent = next(s for s in job["steps"] if s.get("id") == "agent")
    assert "seepient run" in agent["run"] and "--json" in agent["run"]
    assert job["permissions"] == {"contents": "read"}


def test_the_steps_pass_when_the_agent_finishes(world):
    (world.workspace / "a.py").write_text("x = 1\n")
    script = world.script(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]}, {"text": "all good"}]
    )
    codes, outputs = _run_job(world, _workflow()["jobs"]["agent"], f"replay:{script}", "check a.py")
    assert codes == [0, 0]
    assert outputs["exit-code"] == "0"
    events = (world.workspace / "seepient-events.jsonl").read_text().splitlines()
    assert '"turn_completed"' in events[-1]


def test_the_steps_fail_with_5_when_an_action_needed_approval(world):
    script = world.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.py", "content": "y = 2\n"}}]},
            {"text": "could not write"},
        ]
    )
    codes, outputs = _run_job(world, _workflow()["jobs"]["agent"], f"replay:{script}", "write new.py")
    # The agent step fails with 5; the audit check still runs (if: always()) and passes.
    assert codes == [5, 0]
    assert outputs["exit-code"] == "5"
    assert not (world.workspace / "new.py").exists()
