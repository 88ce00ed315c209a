"""Signed head checkpoints and the witness, against what someone who can write the log's folder would try:
rewrite the chain and its anchor consistently, sign it with their own key, strip or forge the signature,
roll the log back to an earlier state, or delete it. (The key folder is out of their reach; see
docs/security.md, *The audit log*.)"""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from seepient.audit import AuditLog, AuditLogCorrupted, AuditLogError, format_report, verify_log
from seepient.audit.signing import AuditKeyError, CheckpointSigner, CheckpointVerifier
from tests.audit.conftest import (
    anchor_slot_bytes,
    attacker_key_id,
    make_record,
    read_anchor_slots,
    signed_anchor_slot,
)

COUNT = 6
_FORK = multiprocessing.get_context("fork")


def _bad(report, *fragments: str):
    assert not report.ok, format_report(report)
    for fragment in fragments:
        assert fragment in (report.problem or ""), report.problem
    return report


def test_a_signed_log_verifies_and_names_its_key(signed_log):
    log = signed_log(COUNT)
    report = log.verify()
    assert report.ok and report.records == COUNT
    key_id = CheckpointVerifier.from_file(log.public_key).key_id
    assert (report.signature, report.key_id, report.checkpoint_seq) == ("valid", key_id, COUNT)
    text = format_report(report)
    assert f"signed by {key_id}: signature valid" in text
    # Without the public key the signature is reported as not checked, never as valid.
    unchecked = verify_log(log.path)
    assert unchecked.ok and unchecked.signature == "unchecked" and "NOT checked" in format_report(unchecked)


def test_the_keys_are_private_and_apart_from_the_log(signed_log, tmp_path):
    old = os.umask(0)
    try:
        log = signed_log(1)
    finally:
        os.umask(old)
    assert stat.S_IMODE(log.key.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.public_key.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.key.parent.stat().st_mode) == 0o700
    assert log.key.parent != log.path.parent
    assert b"PRIVATE KEY" not in log.path.read_bytes() + log.anchor.read_bytes()


def test_a_consistent_rewrite_of_chain_and_anchor_without_the_key_fails(signed_log):
    log = signed_log(COUNT)
    # The attacker drops record 3, rechains and rehashes everything after it, and writes a matching anchor
    # with valid checks: exactly what an unsigned log could not tell from the original.
    lines = log.lines()
    entries = log.rewrite_consistently(lines[:2] + lines[3:])
    head = {
        "genesis": "0" * 64,
        "first_hash": entries[0]["hash"],
        "seq": len(entries),
        "hash": entries[-1]["hash"],
    }
    log.write_anchor(head)
    _bad(log.verify(), "not signed")
    # ... or signs it with a key of their own.
    own = Ed25519PrivateKey.generate()
    slot = signed_anchor_slot(head, own)
    log.anchor.write_bytes(slot + slot)
    _bad(log.verify(), "signed by key", attacker_key_id(own.public_key()))
    # ... or claims the real key's id over their own signature.
    real_id = CheckpointVerifier.from_file(log.public_key).key_id
    slot = signed_anchor_slot(head, own, key_id=real_id)
    log.anchor.write_bytes(slot + slot)
    _bad(log.verify(), "signature is not valid")
    # The next session's writer refuses to chain onto any of these.
    with pytest.raises(AuditLogCorrupted, match="signature is not valid"):
        log.writer().append(make_record(99))


def test_an_edited_record_with_its_old_signed_anchor_still_fails(signed_log):
    log = signed_log(COUNT)
    lines = log.lines()
    edited = lines[:3] + [lines[3].replace(b"action 4", b"action X")] + lines[4:]
    log.rewrite_consistently(edited)
    _bad(log.verify())


def test_stripping_the_signature_off_the_true_head_fails(signed_log):
    log = signed_log(COUNT)
    head = {key: log.anchor_json()[key] for key in ("genesis", "first_hash", "seq", "hash")}
    log.anchor.write_bytes(anchor_slot_bytes(head) * 2)
    _bad(log.verify(), "not signed")
    with pytest.raises(AuditLogCorrupted, match="stripped"):
        log.writer().append(make_record(99))


def test_a_forged_checkpoint_signature_fails(signed_log):
    log = signed_log(COUNT)
    raw = log.anchor.read_bytes()
    slot = json.loads(raw[:512])
    newest = max((json.loads(raw[i * 512 : (i + 1) * 512]) for i in range(2)), key=lambda s: s["seq"])
    flipped = (
        newest["signature"][:10] + ("A" if newest["signature"][10] != "A" else "B") + newest["signature"][11:]
    )
    forged = {k: v for k, v in newest.items() if k not in ("format", "check", "signature")}
    # The attacker recomputes the slot's check so the slot itself reads as whole.
    import hashlib

    import rfc8785

    members = {"format": slot["format"], **forged, "signature": flipped}
    members = {
        k: members[k] for k in ("format", "genesis", "first_hash", "seq", "hash", "key_id", "signature")
    }
    check = hashlib.sha256(rfc8785.dumps(members)).hexdigest()
    text = json.dumps({**members, "check": check}, separators=(",", ":")).encode().ljust(511) + b"\n"
    log.anchor.write_bytes(text + text)
    _bad(log.verify(), "signature is not valid")


def test_an_old_log_is_signed_by_its_first_signed_append(filled_log, tmp_path):
    log = filled_log(COUNT)  # written before signing existed: an unsigned anchor
    assert verify_log(log.path).signature == "unsigned"
    key = tmp_path / "keys" / "audit-signing.key"
    AuditLog(log.path, signer=CheckpointSigner(key)).append(make_record(COUNT + 1))
    report = verify_log(log.path, public_key=key.with_suffix(".pub"))
    assert report.ok and report.signature == "valid" and report.records == COUNT + 1


def test_a_writer_without_the_key_refuses_a_signed_log(signed_log):
    log = signed_log(COUNT)
    with pytest.raises(AuditLogError, match="no signing key"):
        AuditLog(log.path).append(make_record(99))
    assert log.verify().ok


def test_a_writer_with_another_key_refuses_the_log(signed_log, tmp_path):
    log = signed_log(COUNT)
    other = CheckpointSigner(tmp_path / "elsewhere" / "audit-signing.key")
    with pytest.raises(AuditLogCorrupted, match="signed by key"):
        AuditLog(log.path, signer=other).append(make_record(99))


def test_a_public_key_that_does_not_match_the_signing_key_is_refused(signed_log):
    log = signed_log(1)
    attacker = Ed25519PrivateKey.generate().public_key()
    from cryptography.hazmat.primitives import serialization

    log.public_key.write_bytes(
        attacker.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(AuditLogError, match="not the public key"):
        log.writer().append(make_record(2))


def test_a_signing_key_readable_by_others_is_refused(signed_log):
    log = signed_log(1)
    log.key.chmod(0o644)
    with pytest.raises(AuditLogError, match="readable by other users"):
        log.writer().append(make_record(2))
    with pytest.raises(AuditKeyError):
        CheckpointSigner(log.key).sign("0" * 64, 1, "0" * 64)


def _make_key(path: Path, barrier, out) -> None:
    barrier.wait()
    out.put(CheckpointSigner(path).key_id)


def test_two_processes_making_the_key_at_once_end_up_with_one_key(tmp_path):
    path = tmp_path / "keys" / "audit-signing.key"
    barrier, out = _FORK.Barrier(4), _FORK.Queue()
    workers = [_FORK.Process(target=_make_key, args=(path, barrier, out)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    assert len({out.get(timeout=5) for _ in workers}) == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["audit-signing.key", "audit-signing.pub"]


def test_records_appended_after_the_signed_head_are_reported_and_marked_for_good(signed_log, record_factory):
    log = signed_log(COUNT)
    # Someone without the key appends a record that chains correctly after the signed head.
    unsigned = AuditLog(log.path)
    lines = log.lines()
    last = json.loads(lines[-1])
    forged = {"seq": last["seq"] + 1, "prev": last["hash"], **record_factory(50).to_json()}
    forged["hash"] = log.rehash(forged)
    log.write_lines([*lines, json.dumps(forged, separators=(",", ":")).encode() + b"\n"])
    del unsigned
    report = log.verify()
    assert report.ok and any("after the last signed checkpoint" in w for w in report.warnings), (
        report.warnings
    )
    # The next signed append covers them, and says, in the chain itself, that they were found unsigned.
    log.writer().append(make_record(60))
    report = log.verify()
    assert report.ok and report.signature == "valid"
    assert any(f"record {COUNT + 1} followed the last signed checkpoint" in w for w in report.warnings), (
        report.warnings
    )


# -- the witness ------------------------------------------------------------------------------------------


def test_the_witness_follows_every_signed_checkpoint(signed_log):
    log = signed_log(COUNT, witness=True)
    report = log.verify()
    assert report.ok and report.witness_seq == COUNT and "witness" in format_report(report)
    assert stat.S_IMODE(log.witness.stat().st_mode) == 0o600
    newest = [
        max((slot for slot in read_anchor_slots(raw) if slot), key=lambda slot: slot["seq"])
        for raw in (log.witness.read_bytes(), log.anchor.read_bytes())
    ]
    assert newest[0] == newest[1] and newest[0]["seq"] == COUNT and newest[0]["signature"]


def test_a_log_rolled_back_to_an_earlier_state_is_caught_by_the_witness(signed_log):
    log = signed_log(3, witness=True)
    # The attacker keeps a copy of the log and its (validly signed) anchor at record 3 ...
    old_log, old_anchor = log.path.read_bytes(), log.anchor.read_bytes()
    writer = log.writer()
    for index in range(4, 7):
        writer.append(make_record(index))
    writer.close()
    # ... and later puts it back, hiding records 4-6. Without the witness this is indistinguishable.
    log.path.write_bytes(old_log)
    log.anchor.write_bytes(old_anchor)
    assert log.verify(witness=False).ok
    _bad(log.verify(), "rolled back")
    with pytest.raises(AuditLogCorrupted, match="rolled back"):
        log.writer().append(make_record(7))


def test_a_deleted_log_and_anchor_are_caught_by_the_witness(signed_log):
    log = signed_log(COUNT, witness=True)
    log.path.unlink()
    log.anchor.unlink()
    assert log.verify(witness=False).ok  # "no audit log yet": nothing else could tell
    _bad(log.verify(), "the log file and its anchor are missing, but the witness", "(the log was deleted)")
    # A new session must not start a fresh log over the evidence (and overwrite the witness).
    with pytest.raises(AuditLogCorrupted, match="rolled back or deleted"):
        log.writer().append(make_record(1))
    assert log.verify().ok is False


def test_a_log_replaced_by_another_signed_log_is_caught_by_the_witness(signed_log, tmp_path):
    log = signed_log(COUNT, witness=True)
    other = tmp_path / "other" / "audit.log"
    writer = AuditLog(other, signer=CheckpointSigner(log.key))  # even signed with the real key
    for index in range(1, COUNT + 3):
        writer.append(make_record(index))
    writer.close()
    log.path.write_bytes(other.read_bytes())
    log.anchor.write_bytes(other.with_name("audit.log.anchor").read_bytes())
    _bad(log.verify(), "witness")


def test_a_forged_witness_checkpoint_is_not_trusted(signed_log):
    log = signed_log(COUNT, witness=True)
    head = {"genesis": "0" * 64, "first_hash": log.anchor_json()["first_hash"], "seq": 50, "hash": "e" * 64}
    slot = signed_anchor_slot(head, Ed25519PrivateKey.generate())
    log.witness.write_bytes(slot + slot)
    _bad(log.verify(), "witness", "not signed by the audit key")


def test_a_witness_that_is_not_a_regular_file_fails_verification(signed_log):
    log = signed_log(COUNT, witness=True)
    log.witness.unlink()
    os.mkfifo(log.witness)
    _bad(log.verify(), "is not a regular file, so it cannot be the audit witness")


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_witness_path_that_is_not_a_witness_is_never_overwritten(signed_log, tmp_path, kind):
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=$HOME/bin:$PATH\n")
    log = signed_log(1)
    target = victim
    if kind == "symlink":
        target = tmp_path / "witness-link"
        target.symlink_to(victim)
    writer = AuditLog(log.path, signer=CheckpointSigner(log.key), witness_path=target)
    with pytest.raises(AuditLogError):
        writer.append(make_record(2))
    assert victim.read_text() == "export PATH=$HOME/bin:$PATH\n"


# --- loading the key ahead of the first record -------------------------------------------------------------


def test_preload_creates_no_key_and_the_first_record_still_makes_one(tmp_path):
    key = tmp_path / "keys" / "audit.key"
    signer = CheckpointSigner(key)
    signer.preload()
    assert not key.exists() and not key.parent.exists()
    log = AuditLog(tmp_path / "audit.jsonl", signer=signer)
    try:
        log.append(make_record(0))
    finally:
        log.close()
    assert key.is_file() and signer.key_id == CheckpointSigner(key).key_id


def test_preload_loads_an_existing_key_so_the_first_record_reads_nothing(tmp_path, monkeypatch):
    key = tmp_path / "keys" / "audit.key"
    expected = CheckpointSigner(key).key_id  # makes the pair
    signer = CheckpointSigner(key)
    signer.preload()
    import seepient.audit.signing as signing

    def no_second_read(path):
        raise AssertionError(f"the key was read again from {path}")

    monkeypatch.setattr(signing, "_load_or_create", no_second_read)
    assert signer.key_id == expected


def test_preload_of_an_unreadable_key_raises_nothing_and_the_first_record_says_why(tmp_path):
    key = tmp_path / "keys" / "audit.key"
    assert CheckpointSigner(key).key_id  # makes the pair
    os.chmod(key, 0o644)  # readable by others: refused as a signing key
    signer = CheckpointSigner(key)
    signer.preload()
    log = AuditLog(tmp_path / "audit.jsonl", signer=signer)
    try:
        with pytest.raises(AuditLogError, match="readable by other users"):
            log.append(make_record(0))
    finally:
        log.close()
    assert not (tmp_path / "audit.jsonl").exists() or (tmp_path / "audit.jsonl").read_bytes() == b""


def test_a_signature_nobody_waited_for_is_never_handed_to_the_next_checkpoint(tmp_path):
    from seepient.audit.signing import _SigningThread, checkpoint_message

    signer = CheckpointSigner(tmp_path / "audit.key")
    verifier = signer.verifier()
    worker = _SigningThread.shared()
    key = signer._load()
    with worker.busy:
        # A caller interrupted between handing its checkpoint over and taking the signature leaves it behind.
        worker.submit(key, checkpoint_message("a" * 64, 1, "b" * 64))
    first_hash, head = "c" * 64, "d" * 64

    def work() -> None:
        pass

    signature = signer.sign_during(work, first_hash, 2, head)
    assert verifier.valid(first_hash, 2, head, signature)
