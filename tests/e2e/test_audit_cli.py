"""``seepient audit verify`` end to end: a real session signs its log and feeds the witness named in the user's
settings; verify checks both by default, names the key, and fails on a rollback or a foreign public key."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def _script(world, name: str) -> str:
    return str(
        world.script(
            [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": name, "content": f"{name}\n"}}]},
                {"text": "ok"},
            ],
            name=f"{name}.yaml",
        )
    )


def test_verify_checks_the_signature_and_the_witness_and_catches_a_rollback(world, seepient, tmp_path):
    witness = tmp_path / "other-volume" / "audit.witness"
    witness.parent.mkdir()
    world.seepient_home.mkdir(parents=True)
    (world.seepient_home / "settings.json").write_text(json.dumps({"audit": {"witnessPath": str(witness)}}))
    assert seepient("run", "x", "-y", "--model", f"replay:{_script(world, 'a.txt')}").returncode == 0
    log = world.seepient_home / "audit.log"
    anchor = log.with_name("audit.log.anchor")
    saved_log, saved_anchor = log.read_bytes(), anchor.read_bytes()
    assert seepient("run", "x", "-y", "--model", f"replay:{_script(world, 'b.txt')}").returncode == 0

    intact = seepient("audit", "verify", "--json")
    assert intact.returncode == 0, intact.stdout
    report = json.loads(intact.stdout)
    assert report["ok"] and report["signature"] == "valid" and report["witness_seq"] == report["head_seq"]
    assert report["key_id"].startswith("ed25519:") and report["interrupted"] == []
    assert f"signed by {report['key_id']}: signature valid" in seepient("audit", "verify").stdout

    foreign = tmp_path / "foreign.pub"
    foreign.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    wrong_key = seepient("audit", "verify", "--public-key", str(foreign))
    assert wrong_key.returncode == 1 and "not by the audit key" in wrong_key.stdout

    # Put the log and its validly signed anchor back as they were after the first run.
    log.write_bytes(saved_log)
    anchor.write_bytes(saved_anchor)
    rolled_back = seepient("audit", "verify")
    assert rolled_back.returncode == 1 and "rolled back" in rolled_back.stdout
    # The next run refuses to record onto it, so nothing runs.
    refused = seepient("run", "x", "-y", "--model", f"replay:{_script(world, 'c.txt')}")
    assert not (world.workspace / "c.txt").exists(), refused.stdout + refused.stderr
