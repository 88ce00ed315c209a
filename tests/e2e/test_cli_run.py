"""End to end: the real ``seepient`` command, a scripted model, real policy, real bubblewrap, real audit log."""

from __future__ import annotations

import hashlib
import os

from tests.e2e.conftest import SECRET_MARKER, json_events


def test_version(seepient):
    proc = seepient("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("seepient ")


def test_edit_with_yes_lands_and_is_audited(world, seepient):
    (world.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = world.script(
        [
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                    }
                ]
            },
            {"text": "Fixed."},
        ]
    )
    proc = seepient(
        "run", "fix add", "-y", "--model", f"replay:{script}", "--workspace", str(world.workspace), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert (world.workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    events = json_events(proc.stdout)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    types = [e["type"] for e in events]
    assert types[0] == "turn_started" and types[-1] == "turn_completed"
    assert "permission_request" in types and "permission_resolved" in types
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["status"] == "ok"
    records = world.audit_records()
    assert len(records) == 1
    assert records[0]["action"]["digest"] == result["digest"]
    assert records[0]["approval"]["approved_by"] == "flag:-y"
    verify = seepient("audit", "verify")
    assert verify.returncode == 0, verify.stdout


def test_headless_run_refuses_instead_of_waiting(world, seepient):
    original = "x = 1\n"
    (world.workspace / "a.py").write_text(original)
    script = world.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 2\n"}}]},
            {"text": "Could not write."},
        ]
    )
    proc = seepient("run", "change it", "--model", f"replay:{script}", "--json", timeout=60)
    assert proc.returncode == 5, (
        proc.stderr
    )  # the run had to refuse an action: CI must not read it as success
    assert (world.workspace / "a.py").read_text() == original
    result = next(e for e in json_events(proc.stdout) if e["type"] == "tool_result")
    assert result["status"] == "rejected"
    assert "-y" in result["output"]
    assert world.audit_records()[0]["outcome"]["status"] == "rejected"


def test_prompt_from_stdin(world, seepient):
    script = world.script([{"text": "hello from the script"}])
    proc = seepient("run", "--model", f"replay:{script}", input="say hello\n")
    assert proc.returncode == 0, proc.stderr
    assert "hello from the script" in proc.stdout


def test_attacks_through_the_cli_are_denied_and_audited(world, seepient):
    target = world.outside / "victim.txt"
    target.write_text("untouched\n")
    (world.workspace / "link").symlink_to(world.outside)
    (world.workspace / "innocent.txt").symlink_to(target)
    calls = [
        {"name": "write_file", "arguments": {"path": "../outside/victim.txt", "content": "pwned"}},
        {"name": "write_file", "arguments": {"path": str(target), "content": "pwned"}},
        {"name": "write_file", "arguments": {"path": "link/victim.txt", "content": "pwned"}},
        {
            "name": "edit_file",
            "arguments": {"path": "innocent.txt", "old_string": "untouched", "new_string": "pwned"},
        },
        {"name": "read_file", "arguments": {"path": "~/.ssh/id_rsa"}},
        {
            "name": "write_file",
            "arguments": {
                "path": ".seepient/settings.json",
                "content": '{"permissions": {"allow": ["Shell"]}}',
            },
        },
        {"name": "shell", "arguments": {"command": "echo pwned > ../outside/victim.txt"}},
        {"name": "shell", "arguments": {"command": "cat ~/.ssh/id_rsa"}},
    ]
    script = world.script([{"tool_calls": [c]} for c in calls] + [{"text": "done"}])
    proc = seepient(
        "run", "attack", "-y", "--mode", "autonomous-trusted", "--model", f"replay:{script}", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "untouched\n"
    assert not (world.workspace / ".seepient" / "settings.json").exists()
    results = [e for e in json_events(proc.stdout) if e["type"] == "tool_result"]
    assert len(results) == len(calls)
    for call, result in zip(calls, results, strict=True):
        assert result["status"] == "denied", (call, result)
        assert SECRET_MARKER not in result["output"]
    assert SECRET_MARKER not in proc.stdout + proc.stderr
    assert [r["outcome"]["status"] for r in world.audit_records()] == ["denied"] * len(calls)


def test_sandboxed_shell_sees_no_secrets_and_cannot_escape(world, seepient):
    (world.outside / "victim.txt").write_text("untouched\n")
    commands = [
        "env",
        # Opaque to static analysis (policy lets -y approve it), so the sandbox itself must hide the keys.
        'python3 -c "import os; h = os.path.expanduser(chr(126)); '
        "[print(open(os.path.join(h, '.' + d, f)).read()) for d, f in (('s' + 'sh', 'id_rsa'), ('a' + 'ws', 'credentials'))]\""
        " 2>&1; true",
        "python3 -c \"open('" + str(world.outside / "victim.txt") + "', 'w').write('pwned')\" 2>&1; true",
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9), 2)\" 2>&1; true",
    ]
    script = world.script(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": c}}]} for c in commands]
        + [{"text": "ok"}]
    )
    proc = seepient("run", "look", "-y", "--model", f"replay:{script}", "--json")
    assert proc.returncode == 0, proc.stderr
    results = [e for e in json_events(proc.stdout) if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["ok"] * len(commands), results
    for result in results:
        assert SECRET_MARKER not in result["output"]
    assert (world.outside / "victim.txt").read_text() == "untouched\n"
    # The host /tmp is replaced by a private one, so the outside folder is simply not there.
    assert any(
        e in results[2]["output"] for e in ("Read-only file system", "Permission denied", "No such file")
    )
    assert "Errno" in results[3]["output"]


def test_missing_sandbox_is_a_clear_refusal(world, seepient):
    script = world.script(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}]
    )
    env = dict(world.env, SEEPIENT_BWRAP="/nonexistent/bwrap")  # as if bubblewrap were not installed
    proc = seepient("run", "x", "-y", "--model", f"replay:{script}", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    result = next(e for e in json_events(proc.stdout) if e["type"] == "tool_result")
    assert result["status"] == "error"
    assert "bubblewrap" in result["output"] and "--sandbox off" in result["output"]


def test_configuration_errors_exit_2_with_a_reason(world, seepient):
    bad = world.home / "bad.yaml"
    bad.write_text("- text: 1\n  tool_calls: nope\n")
    proc = seepient("run", "x", "--model", f"replay:{bad}")
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr
    env = {k: v for k, v in world.env.items() if k != "OPENAI_API_KEY"}
    proc = seepient("run", "x", "--model", "openai:gpt-4.1", env=env)
    assert proc.returncode == 2
    assert "OPENAI_API_KEY" in proc.stderr
    (world.workspace / ".seepient").mkdir()
    (world.workspace / ".seepient" / "settings.json").write_text('{"permissions": ')
    proc = seepient("run", "x", "--model", "replay:whatever.yaml")
    assert proc.returncode == 2
    assert "settings.json:1" in proc.stderr


def test_script_past_the_end_names_the_step(world, seepient):
    script = world.script([{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}])
    proc = seepient("run", "x", "--model", f"replay:{script}")
    assert proc.returncode == 1
    assert "2" in proc.stderr and str(script) in proc.stderr


def test_sandbox_run_passes_output_and_exit_code_through(world, seepient):
    proc = seepient(
        "sandbox",
        "run",
        "--workspace",
        str(world.workspace),
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; exit 7",
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (7, "out\n", "err\n")
    proc = seepient("sandbox", "run", "--", "sh", "-c", "env; cat $HOME/.ssh/id_rsa")
    assert SECRET_MARKER not in proc.stdout + proc.stderr


def test_audit_verify_catches_tampering(world, seepient):
    script = world.script(
        [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]} for _ in range(3)]
        + [{"text": "ok"}]
    )
    assert seepient("run", "x", "--model", f"replay:{script}").returncode == 0
    log = world.seepient_home / "audit.log"
    lines = log.read_text().splitlines(keepends=True)
    assert len(lines) == 6  # an intent and an outcome per glob
    log.write_text(lines[0] + lines[2] + lines[1] + "".join(lines[3:]))
    proc = seepient("audit", "verify")
    assert proc.returncode == 1
    assert "2" in proc.stdout
    digest_before = hashlib.sha256(log.read_bytes()).hexdigest()
    assert os.path.exists(log) and digest_before


def test_networked_command_goes_only_through_the_filtering_proxy(world, seepient):
    script = world.script(
        [
            {
                "tool_calls": [
                    {
                        "name": "shell",
                        "arguments": {"command": "curl -sS -m 10 http://169.254.169.254/latest/meta-data/"},
                    }
                ]
            },
            {"text": "ok"},
        ]
    )
    proc = seepient("run", "x", "-y", "--model", f"replay:{script}", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = next(e for e in json_events(proc.stdout) if e["type"] == "tool_result")
    assert "refused" in result["output"] and "169.254.169.254" in result["output"], result["output"]


def test_a_repository_cannot_widen_the_network_allowlist(world, seepient):
    (world.workspace / ".seepient").mkdir()
    (world.workspace / ".seepient" / "settings.json").write_text('{"net": {"allowRanges": ["0.0.0.0/0"]}}')
    script = world.script(
        [{"tool_calls": [{"name": "web_fetch", "arguments": {"url": "http://10.9.9.9/"}}]}, {"text": "ok"}]
    )
    for _ in ("untrusted", "trusted"):
        proc = seepient("run", "x", "-y", "--model", f"replay:{script}", "--json")
        assert proc.returncode == 0, proc.stderr
        assert "never set net" in proc.stderr  # the run says what it ignored
        result = next(e for e in json_events(proc.stdout) if e["type"] == "tool_result")
        assert "refuse" in result["output"] and "10.9.9.9" in result["output"], result["output"]
        assert seepient("trust", "--yes", str(world.workspace)).returncode == 0


def test_sandbox_run_network_goes_through_the_filtering_proxy(world, seepient):
    proc = seepient("sandbox", "run", "--network", "--", "curl", "-sS", "-m", "10", "http://169.254.169.254/")
    assert "refused" in proc.stdout + proc.stderr and "link-local" in proc.stdout + proc.stderr
    without = seepient("sandbox", "run", "--", "curl", "-sS", "-m", "5", "http://169.254.169.254/")
    assert without.returncode != 0  # no network at all without --network
