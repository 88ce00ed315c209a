"""End to end, headless (no terminal, no -y): a run that had to refuse an action exits 5 and names, per refused
action, the rule that asked and why, in plain and JSON output; a model error and the step limit outrank it; and
results of parallel tool calls name their call."""

from __future__ import annotations

from tests.e2e.conftest import json_events


def _write(path: str) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": "x = 2\n"}}


def test_a_refused_action_exits_5_with_the_rule_and_why(world, seepient):
    script = world.script([{"tool_calls": [_write("a.py"), _write("b.py")]}, {"text": "could not write"}])
    proc = seepient("run", "write two files", "--model", f"replay:{script}")
    assert proc.returncode == 5, proc.stderr
    assert "could not write" in proc.stdout
    assert "2 actions refused: they need approval and no one can answer here" in proc.stderr
    assert "- write_file a.py: policy asked (mode:ask-untrusted): it creates a.py" in proc.stderr
    assert "- write_file b.py: policy asked (mode:ask-untrusted): it creates b.py" in proc.stderr
    assert not (world.workspace / "a.py").exists() and not (world.workspace / "b.py").exists()


def test_json_output_carries_the_rule_and_why(world, seepient):
    script = world.script([{"tool_calls": [_write("a.py")]}, {"text": "no"}])
    proc = seepient("run", "write", "--model", f"replay:{script}", "--json")
    assert proc.returncode == 5, proc.stderr
    events = json_events(proc.stdout)
    (resolved,) = [e for e in events if e["type"] == "permission_resolved"]
    assert resolved["response"]["approved_by"] == "headless"
    assert resolved["response"]["feedback"].startswith("policy asked (mode:ask-untrusted): it creates a.py;")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["status"] == "rejected" and "policy asked (mode:ask-untrusted)" in result["output"]


def test_a_run_with_nothing_refused_exits_0(world, seepient):
    (world.workspace / "a.py").write_text("x = 1\n")
    script = world.script(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]}, {"text": "read"}]
    )
    proc = seepient("run", "read", "--model", f"replay:{script}")
    assert proc.returncode == 0, proc.stderr
    assert "refused" not in proc.stderr


def test_the_step_limit_and_a_model_error_outrank_a_refusal(world, seepient):
    looping = world.script([{"tool_calls": [_write("a.py")]}, {"tool_calls": [_write("b.py")]}])
    limited = seepient("run", "write", "--max-steps", "1", "--model", f"replay:{looping}")
    assert limited.returncode == 3, limited.stderr
    assert "write_file a.py: policy asked" in limited.stderr  # still named
    # The script ends after the refusal: the next model request fails, which is a model error.
    short = world.script([{"tool_calls": [_write("a.py")]}], "short.yaml")
    failed = seepient("run", "write", "--model", f"replay:{short}")
    assert failed.returncode == 1, failed.stderr
    assert "write_file a.py: policy asked" in failed.stderr


def test_results_of_parallel_calls_name_their_call(world, seepient):
    (world.workspace / "a.py").write_text("alpha = 1\n")
    (world.workspace / "b.py").write_text("beta = 2\n")
    reads = [{"name": "read_file", "arguments": {"path": p}} for p in ("a.py", "b.py")]
    script = world.script([{"tool_calls": reads}, {"text": "both read"}])
    proc = seepient("run", "read both", "--model", f"replay:{script}")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    (first,) = [line for line in lines if "[read_file a.py] ok:" in line]
    (second,) = [line for line in lines if "[read_file b.py] ok:" in line]
    assert "alpha = 1" in first and "beta = 2" in second
