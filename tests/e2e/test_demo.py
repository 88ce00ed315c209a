"""End to end: ``seepient demo``, the README's main job, on a machine with no terminal."""

from __future__ import annotations

import re
from pathlib import Path


def test_demo_fixes_the_bug_in_the_sandbox_and_audits_it(world, seepient):
    proc = seepient("demo", timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no terminal" in proc.stderr  # it says it approves its own actions
    match = re.search(r"workspace: (\S+)", proc.stderr)
    assert match, proc.stderr
    workspace = Path(match.group(1))
    assert "return a + b" in (workspace / "calc.py").read_text()
    assert "tests in the sandbox: passed" in proc.stderr
    records = world.audit_records()
    assert [r["action"]["tool"] for r in records] == ["read_file", "edit_file", "shell"]
    assert seepient("audit", "verify").returncode == 0
