"""End to end: ``seepient audit show`` lists what the log holds, readably and as JSON, per session; ``audit
export`` writes one flat JSON line per action for a SIEM; a damaged line is named, not fatal."""

from __future__ import annotations

import json

from tests.e2e.conftest import json_events


def _two_runs(world, seepient) -> tuple[str, str]:
    (world.workspace / "a.py").write_text("x = 1\n")
    first = world.script(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.py", "content": "y\n"}}]},
            {"text": "done"},
        ]
    )
    one = seepient("run", "read and write", "--model", f"replay:{first}", "--json")
    assert one.returncode == 5, one.stderr
    second = world.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "c.py", "content": "z\n"}}]},
            {"text": "ok"},
        ],
        "second.yaml",
    )
    two = seepient("run", "write c", "-y", "--model", f"replay:{second}", "--json")
    assert two.returncode == 0, two.stderr
    return json_events(one.stdout)[0]["session_id"], json_events(two.stdout)[0]["session_id"]


def test_show_lists_actions_per_session_readably_and_as_json(world, seepient):
    first, second = _two_runs(world, seepient)
    shown = seepient("audit", "show")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == 3
    assert first in lines[0] and "✓ ok" in lines[0] and "read_file: Read a.py" in lines[0]
    assert "✋ rejected" in lines[1] and "write_file" in lines[1] and "mode:ask-untrusted" in lines[1]
    assert "headless" in lines[1]
    assert second in lines[2] and "✓ ok" in lines[2] and "flag:-y" in lines[2]

    only = json.loads(seepient("audit", "show", "--session", second, "--json").stdout)
    assert [(e["tool"], e["status"], e["approved_by"]) for e in only] == [("write_file", "ok", "flag:-y")]
    assert only[0]["session_id"] == second and only[0]["surface"] == "cli"
    assert only[0]["digest"] == world.audit_records()[-1]["action"]["digest"]


def test_export_writes_json_lines_for_a_siem(world, seepient, tmp_path):
    first, _ = _two_runs(world, seepient)
    out = seepient("audit", "export")
    assert out.returncode == 0, out.stderr
    entries = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["status"] for e in entries] == ["ok", "rejected", "ok"]
    for entry in entries:
        assert {"timestamp", "session_id", "tool", "decision", "rule", "status", "digest", "seq"} <= set(
            entry
        )
    target = tmp_path / "export.jsonl"
    written = seepient("audit", "export", "--session", first, "-o", str(target))
    assert written.returncode == 0 and "2 record(s)" in written.stderr
    assert [json.loads(line)["session_id"] for line in target.read_text().splitlines()] == [first, first]


def test_a_damaged_line_is_named_and_the_rest_still_shown(world, seepient):
    _two_runs(world, seepient)
    log = world.seepient_home / "audit.log"
    lines = log.read_text().splitlines()
    lines[0] = lines[0][:40]
    log.write_text("\n".join(lines) + "\n")
    shown = seepient("audit", "show")
    assert shown.returncode == 0
    assert "line 1 is not JSON" in shown.stderr and "audit verify" in shown.stderr
    assert len(shown.stdout.splitlines()) == 2
    assert seepient("audit", "verify").returncode == 1


def test_no_log_yet_is_a_clear_error(world, seepient):
    proc = seepient("audit", "show")
    assert proc.returncode == 2 and "no audit log" in proc.stderr
