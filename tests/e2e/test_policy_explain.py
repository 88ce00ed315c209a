"""``seepient policy explain`` through the real console script: verdicts from the workspace's real settings
(managed, project, user), exit 0 whatever the verdict, 2 for bad usage, and nothing ever run."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture
def explain(world, seepient, tmp_path: Path):
    managed = tmp_path / "managed-settings.json"
    env = {**world.env, "SEEPIENT_MANAGED_SETTINGS": str(managed)}
    (world.workspace / ".env").write_text("TOKEN=secret\n")
    (world.workspace / "src").mkdir()
    (world.workspace / "src" / "app.py").write_text("print('hi')\n")

    def run(*args: str, **kwargs):
        return seepient("policy", "explain", "--workspace", str(world.workspace), *args, env=env, **kwargs)

    run.managed = managed  # type: ignore[attr-defined]
    return run


def settings(path: Path, permissions: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))


def verdict(done) -> dict:
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # exactly one JSON object
    return json.loads(lines[0])


def test_json_output_has_exactly_the_documented_fields(explain) -> None:
    result = verdict(explain("--json", "--", "git", "status", "&&", "rm", "-rf", "build"))
    assert set(result) == {"decision", "reasons", "rule", "decided_by", "commands", "capabilities"}
    assert result["decision"] == "ask" and result["rule"] == "mode:ask-untrusted"
    assert result["commands"] == [
        {"argv": ["git", "status"], "binary": "git"},
        {"argv": ["rm", "-rf", "build"], "binary": "rm"},
    ]
    assert "destructive" in result["capabilities"]
    assert all(isinstance(reason, str) and reason for reason in result["reasons"])


def test_every_target_kind_and_every_verdict_exits_0(explain, world) -> None:
    assert verdict(explain("--json", "--", "ls", "-la"))["decision"] == "allow"
    assert verdict(explain("--json", "--read", "src/app.py"))["decision"] == "allow"
    assert verdict(explain("--json", "--edit", "src/app.py"))["decision"] == "ask"
    assert verdict(explain("--json", "--write", "new.txt"))["capabilities"] == ["write_workspace"]
    fetched = verdict(explain("--json", "--fetch", "https://example.com/docs"))
    assert (fetched["decision"], fetched["capabilities"]) == ("ask", ["network"])
    denied = verdict(explain("--json", "--read", str(world.home / ".ssh" / "id_rsa")))
    assert (denied["decision"], denied["rule"]) == ("deny", "path_guard:sensitive")
    assert verdict(explain("--json", "--write", "../outside/x"))["decision"] == "deny"


def test_modes_change_the_verdict(explain) -> None:
    assert verdict(explain("--json", "--mode", "always-ask", "--", "ls"))["decision"] == "ask"
    assert verdict(explain("--json", "--mode", "bypass", "--", "npm", "test"))["rule"] == (
        "mode:autonomous-trusted"
    )
    assert verdict(explain("--json", "--mode", "on-request", "--", "npm", "test"))["decision"] == "ask"


def test_the_workspace_rules_apply_with_their_sources(explain, world, seepient) -> None:
    project = world.workspace / ".seepient" / "settings.json"
    settings(project, {"deny": ["Read(.env)"], "allow": ["Shell(npm test)"]})
    settings(world.seepient_home / "settings.json", {"deny": ["Shell(git push:*)"]})
    untrusted = verdict(explain("--json", "--", "npm", "test"))
    assert untrusted["rule"] == "mode:ask-untrusted"  # the team's allow rule waits for trust
    assert untrusted["project"] == {"path": str(project), "trusted": False, "ignored": ["permissions.allow"]}
    assert seepient("trust", "--yes", str(world.workspace)).returncode == 0
    denied = verdict(explain("--json", "--", "cat", ".env"))
    assert (denied["decision"], denied["rule"]) == ("deny", "deny:Read(.env)")
    assert f"{project}: permissions.deny[0]" in denied["reasons"][0]
    pushed = verdict(explain("--json", "--", "git", "--no-pager", "push", "origin"))
    assert (pushed["decision"], pushed["rule"]) == ("deny", "deny:Shell(git push:*)")
    allowed = verdict(explain("--json", "--", "npm", "test"))
    assert allowed["rule"] == "allow:Shell(npm test)"
    # The team's rule is named as the project's, with its file and position.
    assert allowed["ruleSource"] == {"origin": "project", "where": f"{project}: permissions.allow[0]"}
    assert allowed["project"]["trusted"] is True
    shown = explain("--", "npm", "test").stdout
    assert (
        f"decided by: allow rule Shell(npm test) at {project}: permissions.allow[0] (project settings)"
        in shown
    )
    assert f"project settings: {project} (trusted)" in shown
    human = explain("--", "cat", ".env")
    assert human.returncode == 0
    assert human.stdout.startswith("DENY: run cat .env")
    assert "deny:Read(.env)" in human.stdout and "nothing was run" in human.stdout


def test_managed_settings_outrank_and_lock_the_rest(explain, world) -> None:
    settings(world.workspace / ".seepient" / "settings.json", {"allow": ["Shell(npm test)"]})
    settings(
        explain.managed,
        {"allowManagedRulesOnly": True, "deny": ["Shell(curl:*)"], "disabledModes": ["bypass"]},
    )
    locked = verdict(explain("--json", "--", "npm", "test"))
    assert (locked["decision"], locked["rule"]) == ("ask", "managed_only:ask-untrusted")
    assert verdict(explain("--json", "--", "curl", "https://example.com"))["rule"] == "deny:Shell(curl:*)"
    refused = explain("--mode", "autonomous-trusted", "--", "ls")
    assert refused.returncode == 2 and "disabledModes" in refused.stderr


def test_quoting_is_kept_when_the_words_are_joined(explain) -> None:
    # The words after -- are joined with spaces into one command line: quoting inside a word survives.
    result = verdict(explain("--json", "--", "echo 'a  b'", "|", "wc", "-c"))
    assert result["commands"] == [
        {"argv": ["echo", "a  b"], "binary": "echo"},
        {"argv": ["wc", "-c"], "binary": "wc"},
    ]


def test_nothing_is_run(explain, world) -> None:
    marker = world.workspace / "created-by-explain"
    for args in (
        ("--", "touch", str(marker)),
        ("--", "echo", "x", ">", str(marker)),
        ("--mode", "autonomous-trusted", "--", "rm", "-rf", "src"),
        ("--write", "created-by-explain"),
        ("--edit", "src/app.py"),
    ):
        assert explain("--json", *args).returncode == 0
    assert not marker.exists()
    assert (world.workspace / "src" / "app.py").read_text() == "print('hi')\n"
    assert not (world.seepient_home / "audit.log").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "say what to explain"),
        (("--read", "a", "--edit", "b"), "one action at a time"),
        (("--read", "a", "--", "ls"), "one action at a time"),
        (("--mode", "yolo", "--", "ls"), "unknown consent mode"),
        (("--", "   "), "empty"),
        (("--fetch", "ftp://example.com/x"), "cannot fetch"),
        (("--edit", "src"), "is a directory"),
    ],
)
def test_bad_usage_exits_2(explain, args, message: str) -> None:
    done = explain(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert done.stdout == ""


def test_a_malformed_rule_stops_with_its_file_and_position(explain, world) -> None:
    project = world.workspace / ".seepient" / "settings.json"
    settings(project, {"deny": ["Read(.env)", "Shell("]})
    done = explain("--", "ls")
    assert done.returncode == 2
    assert f"{project}: permissions.deny[1]: 'Shell(':" in done.stderr


def test_a_missing_workspace_is_bad_usage(seepient, world) -> None:
    done = seepient("policy", "explain", "--workspace", str(world.workspace / "nope"), "--", "ls")
    assert done.returncode == 2 and "not a directory" in done.stderr


def test_a_malformed_rule_stops_seepient_run_too(world, seepient, tmp_path: Path) -> None:
    """The same error stops a real run before any turn: nothing is asked of the model, nothing runs."""
    project = world.workspace / ".seepient" / "settings.json"
    settings(project, {"allow": ["Shell(npm test)", "Fetch(example.com)"]})
    script = world.script([{"tool_calls": [{"name": "shell", "arguments": {"command": "touch ran"}}]}])
    env = {**world.env, "SEEPIENT_MANAGED_SETTINGS": str(tmp_path / "none.json")}
    # Allow rules are team rules: they are read (and checked) once the project is trusted.
    assert seepient("trust", "--yes", str(world.workspace), env=env).returncode == 0
    done = seepient(
        "run", "go", "-y", "--model", f"replay:{script}", "--workspace", str(world.workspace), env=env
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{project}: permissions.allow[1]: 'Fetch(example.com)':" in done.stderr
    assert not (world.workspace / "ran").exists()


# -- what decided, and where a person finds it -------------------------------------------------------


def test_decided_by_names_the_rule_with_its_file_and_position(explain, world) -> None:
    user = world.seepient_home / "settings.json"
    settings(user, {"deny": ["Read(~/.ssh/**)", "Shell(git push:*)"], "allow": ["Shell(npm test)"]})
    pushed = verdict(explain("--json", "--", "git", "push", "origin"))
    assert (
        pushed["decided_by"] == f"deny rule Shell(git push:*) at {user}: permissions.deny[1] (user settings)"
    )
    tested = verdict(explain("--json", "--", "npm", "test"))
    assert (
        tested["decided_by"] == f"allow rule Shell(npm test) at {user}: permissions.allow[0] (user settings)"
    )
    asked = verdict(explain("--json", "--", "make"))
    assert asked["decided_by"].startswith("the consent mode ask-untrusted (from the default)")
    assert "(from --mode)" in verdict(explain("--json", "--mode", "always-ask", "--", "make"))["decided_by"]
    guarded = verdict(explain("--json", "--read", str(world.home / ".ssh" / "id_rsa")))
    assert "path guard" in guarded["decided_by"]
    human = explain("--", "git", "push", "origin")
    assert f"decided by: deny rule Shell(git push:*) at {user}: permissions.deny[1]" in human.stdout


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://0xA9FEA9FE/latest/meta-data/",
        "http://[::ffff:0:a9fe:a9fe]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://localhost:8080/",
        "http://127.1/",
        "http://[::1]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[5f00::1]/",
        "http://192.31.196.1/",
    ],
)
def test_fetches_the_address_policy_refuses_are_denied_with_its_reason(explain, url: str) -> None:
    for mode in ("ask-untrusted", "autonomous-trusted"):
        result = verdict(explain("--json", "--mode", mode, "--fetch", url))
        assert (result["decision"], result["rule"]) == ("deny", "fetch:address_policy"), result
        assert result["reasons"][0].startswith("the fetch address policy refuses")
        assert "fetch address policy" in result["decided_by"] and "IANA" in result["decided_by"]


def test_the_metadata_reason_says_what_the_address_is(explain) -> None:
    result = verdict(explain("--json", "--fetch", "http://0xA9FEA9FE/latest/meta-data/"))
    assert "169.254.169.254 is link-local" in result["reasons"][0]


def test_the_users_net_allowlist_opens_an_internal_service_at_policy_time(explain, world) -> None:
    (world.seepient_home).mkdir(parents=True, exist_ok=True)
    (world.seepient_home / "settings.json").write_text(
        json.dumps(
            {"net": {"allowRanges": ["10.1.0.0/16"], "allowHosts": ["wiki.corp"], "allowPorts": [8443]}}
        )
    )
    for url in ("http://10.1.2.3/", "http://wiki.corp/", "https://10.1.2.3:8443/"):
        assert verdict(explain("--json", "--fetch", url))["decision"] == "ask", url
    assert verdict(explain("--json", "--fetch", "http://10.2.0.1/"))["rule"] == "fetch:address_policy"
    assert verdict(explain("--json", "--fetch", "https://example.com/"))["decision"] == "ask"


def test_privileged_commands_are_denied_unless_the_user_settings_name_them(explain, world) -> None:
    for words in (["sudo", "true"], ["chmod", "u+s", "tool"], ["iptables", "-F"], ["eval", '"$X"']):
        result = verdict(explain("--json", "--mode", "autonomous-trusted", "--", *words))
        assert (result["decision"], result["rule"]) == ("deny", "shell:privileged"), result
        assert "privileged-command check" in result["decided_by"]
    project = world.workspace / ".seepient" / "settings.json"
    settings(project, {"allow": ["Shell(sudo true)"]})
    assert verdict(explain("--json", "--", "sudo", "true"))["rule"] == "shell:privileged"
    user = world.seepient_home / "settings.json"
    settings(user, {"allow": ["Shell(sudo true)"]})
    opened = verdict(explain("--json", "--", "sudo", "true"))
    assert opened["decision"] == "allow"
    assert opened["decided_by"].endswith("(user settings)") and str(user) in opened["decided_by"]


def test_a_real_run_refuses_privileged_and_dynamic_code_even_with_y(world, seepient, tmp_path: Path) -> None:
    """What explain calls privileged is refused by a real -y run in autonomous-trusted mode: the setuid
    bit is not set and the code built at run time never runs."""
    tool = world.workspace / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "shell", "arguments": {"command": "chmod u+s tool"}},
                    {"name": "shell", "arguments": {"command": 'X="touch pwned"; eval "$X"'}},
                    {"name": "shell", "arguments": {"command": 'bash -c "$(echo touch pwned2)"'}},
                ]
            },
            {"text": "Done."},
        ]
    )
    env = {**world.env, "SEEPIENT_MANAGED_SETTINGS": str(tmp_path / "none.json")}
    done = seepient(
        "run",
        "go",
        "-y",
        "--mode",
        "autonomous-trusted",
        "--model",
        f"replay:{script}",
        "--workspace",
        str(world.workspace),
        "--json",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines() if '"tool_result"' in line]
    assert [r["status"] for r in results] == ["denied", "denied", "denied"], results
    assert not stat.S_IMODE(os.stat(tool).st_mode) & stat.S_ISUID
    assert not (world.workspace / "pwned").exists() and not (world.workspace / "pwned2").exists()
