"""``seepient net check`` through the real console script: verdicts, JSON shape, exit codes, settings."""

from __future__ import annotations

import json

from tests.e2e.conftest import RunCli, Sandboxed


def test_metadata_address_is_blocked_with_json(seepient: RunCli) -> None:
    result = seepient("net", "check", "http://0xA9FEA9FE/latest/meta-data/", "--json")
    assert result.returncode == 1, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict == {
        "url": "http://0xA9FEA9FE/latest/meta-data/",
        "allowed": False,
        "reason": verdict["reason"],
        "addresses": ["169.254.169.254"],
    }
    assert "link-local" in verdict["reason"]


def test_public_address_is_allowed_and_never_fetched(seepient: RunCli) -> None:
    result = seepient("net", "check", "https://93.184.216.34/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("allowed: https://93.184.216.34/")


def test_bad_urls_are_blocked_with_the_reason(seepient: RunCli) -> None:
    for url, words in [("file:///etc/passwd", "scheme 'file'"), ("http://u:p@example.com/", "credentials")]:
        result = seepient("net", "check", url, "--json")
        assert result.returncode == 1
        assert words in json.loads(result.stdout)["reason"]


def test_user_allowlist_opens_an_internal_range_and_a_project_one_is_refused(
    seepient: RunCli, world: Sandboxed
) -> None:
    assert seepient("net", "check", "http://10.1.2.3/").returncode == 1
    world.seepient_home.mkdir(exist_ok=True)
    (world.seepient_home / "settings.json").write_text(json.dumps({"net": {"allowRanges": ["10.1.0.0/16"]}}))
    allowed = seepient("net", "check", "http://10.1.2.3/", "--json")
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["allowed"] is True
    assert seepient("net", "check", "http://127.0.0.1/").returncode == 1
    # A cloned repository must not be able to widen what Seepient may reach.
    (world.workspace / ".seepient").mkdir(exist_ok=True)
    (world.workspace / ".seepient" / "settings.json").write_text(
        json.dumps({"net": {"allowRanges": ["0.0.0.0/0"]}})
    )
    refused = seepient("net", "check", "http://10.9.9.9/")
    assert refused.returncode == 1  # the project's allowlist is ignored: the address stays refused
    # Trusting the project changes nothing: a project never widens what may be reached.
    assert seepient("trust", "--yes", str(world.workspace)).returncode == 0
    assert seepient("net", "check", "http://10.9.9.9/").returncode == 1


def test_bad_usage_exits_2(seepient: RunCli, world: Sandboxed) -> None:
    assert seepient("net", "check").returncode == 2
    assert seepient("net", "check", "http://x/", "--bogus").returncode == 2
    world.seepient_home.mkdir(exist_ok=True)
    (world.seepient_home / "settings.json").write_text(json.dumps({"net": {"allowRanges": ["nope"]}}))
    bad = seepient("net", "check", "http://x/")
    assert bad.returncode == 2 and "allowRanges entry 'nope'" in bad.stderr


def test_web_fetch_of_metadata_through_the_real_cli_is_refused_and_audited(
    seepient: RunCli, world: Sandboxed
) -> None:
    """Even approved (-y) in autonomous-trusted mode, policy denies it with the address policy's reason:
    nobody is asked to approve what the fetch would refuse."""
    script = world.script(
        [
            {
                "tool_calls": [
                    {"name": "web_fetch", "arguments": {"url": "http://0xA9FEA9FE/latest/meta-data/"}}
                ]
            },
            {"text": "Done."},
        ]
    )
    proc = seepient(
        "run",
        "fetch",
        "-y",
        "--mode",
        "autonomous-trusted",
        "--model",
        f"replay:{script}",
        "--workspace",
        str(world.workspace),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert not [line for line in lines if line.get("type") == "permission_request"]
    results = [line for line in lines if line.get("type") == "tool_result"]
    assert results[0]["status"] == "denied"
    assert "169.254.169.254 is link-local" in results[0]["output"]
    fetches = [r for r in world.audit_records() if "169.254.169.254" in json.dumps(r)]
    assert len(fetches) == 1
