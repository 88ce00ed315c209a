"""AuditRecord: the schema, its bindings, and what a record looks like once it is in the log."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from seepient.audit import AuditLog, AuditOutcome, AuditRecord, output_digest, verify_log
from seepient.audit.record import DETAIL_MAX_CHARS
from seepient.protocol import ApprovalResponse, PreparedActionDraft


def test_record_round_trips_through_the_log(log_path, record_factory):
    records = [record_factory(i) for i in range(1, 6)]
    log = AuditLog(log_path)
    entries = [log.append(record) for record in records]

    lines = [json.loads(line) for line in log_path.read_bytes().splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3, 4, 5]
    for record, entry, line in zip(records, entries, lines, strict=True):
        assert AuditRecord.from_entry(line) == record
        assert (line["seq"], line["prev"], line["hash"]) == (entry.seq, entry.prev, entry.hash)
        # The action is stored with its digest, and the digest still matches the stored payload.
        assert line["action"]["digest"] == record.action.digest
        assert PreparedActionDraft.model_validate(line["action"]).digest == line["action"]["digest"]
    assert verify_log(log_path).records == 5


def test_each_line_is_seq_prev_record_hash_in_that_order(log_path, record_factory):
    AuditLog(log_path).append(record_factory(1))
    keys = list(json.loads(log_path.read_bytes()))
    assert keys[:3] == ["seq", "prev", "type"]
    assert keys[-1] == "hash"
    # parent_session_id is stored only for a sub-agent's actions, so a top-level record reads as before.
    assert set(keys) == {"seq", "prev", "hash", *AuditRecord.model_fields} - {"parent_session_id"}


def test_approval_for_another_digest_is_refused(record_factory):
    record = record_factory(1)
    other = ApprovalResponse(decision="approve_once", digest="f" * 64)
    with pytest.raises(ValidationError, match="approval is for digest"):
        AuditRecord.model_validate({**record.model_dump(), "approval": other})


def test_policy_decisions_without_asking_carry_no_approval(record_factory):
    record = record_factory(3)
    assert record.approval is None
    assert record.to_json()["approval"] is None


def test_timestamp_must_have_a_zone_and_is_stored_in_utc(record_factory):
    data = record_factory(1).model_dump()
    with pytest.raises(ValidationError, match="time zone"):
        AuditRecord.model_validate({**data, "timestamp": datetime(2025, 1, 1, 12, 0)})
    paris = datetime(2025, 1, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    record = AuditRecord.model_validate({**data, "timestamp": paris})
    assert record.timestamp == datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    assert record.to_json()["timestamp"] == "2025-01-01T12:00:00Z"


def test_surface_and_status_are_closed_sets(record_factory):
    data = record_factory(1).model_dump()
    with pytest.raises(ValidationError):
        AuditRecord.model_validate({**data, "surface": "email"})
    with pytest.raises(ValidationError):
        AuditOutcome(status="maybe")
    for status in ("ok", "error", "denied", "rejected", "interrupted"):
        assert AuditOutcome(status=status).status == status


def test_detail_is_clipped_and_made_storable():
    long = AuditOutcome(status="error", detail="e" * 10_000)
    assert len(long.detail) == DETAIL_MAX_CHARS
    assert long.detail.endswith("…")
    # A lone surrogate (from bytes decoded with surrogateescape) cannot be canonicalised; it is replaced.
    odd = AuditOutcome(status="error", detail="bad \udcff byte")
    assert "\udcff" not in odd.detail


def test_output_digest_binds_the_exact_output():
    assert output_digest("hé") == hashlib.sha256("hé".encode()).hexdigest()
    assert output_digest(b"\x00\xff") == hashlib.sha256(b"\x00\xff").hexdigest()
    outcome = AuditOutcome.with_output("ok", "out", exit_code=0)
    assert outcome.output_sha256 == output_digest("out")
    with pytest.raises(ValidationError):
        AuditOutcome(status="ok", output_sha256="not-a-digest")


def test_a_mapping_is_validated_as_an_action_record(log_path, record_factory):
    log = AuditLog(log_path)
    record = record_factory(1)
    entry = log.append(record.to_json())
    assert entry.seq == 1
    assert AuditRecord.from_entry(json.loads(log_path.read_bytes())) == record

    broken = {**record.to_json(), "verdict": {"decision": "perhaps"}}
    with pytest.raises(ValidationError):
        log.append(broken)
    tampered_action = {**record.to_json()}
    tampered_action["action"] = {**tampered_action["action"], "summary": "x", "digest": "0" * 64}
    with pytest.raises(ValidationError, match="digest does not match"):
        log.append(tampered_action)
    assert len(log_path.read_bytes().splitlines()) == 1


def test_other_record_types_are_stored_but_cannot_forge_chain_fields(log_path):
    log = AuditLog(log_path)
    assert log.append({"type": "session_started", "session_id": "s1", "surface": "tui"}).seq == 1
    with pytest.raises(ValueError, match="seq, prev and hash"):
        log.append({"type": "note", "seq": 99})
    with pytest.raises(ValueError, match="reserved"):
        log.append({"type": "torn_tail", "torn_length": 3})
    with pytest.raises(ValueError, match="RFC 8785"):
        log.append({"type": "note", "value": float("nan")})
    with pytest.raises(ValueError, match="RFC 8785"):
        log.append({"type": "note", "value": 2**60})
    with pytest.raises(TypeError):
        log.append(["not", "a", "mapping"])  # type: ignore[arg-type]
    report = verify_log(log_path)
    assert report.ok and report.records == 1


def test_a_sub_agent_record_names_its_parent_and_old_records_still_verify(log_path, record_factory):
    log = AuditLog(log_path)
    log.append(record_factory(1))  # a record as every earlier version wrote it
    child = record_factory(2).model_copy(update={"parent_session_id": "ses_parent"})
    log.append(child)
    log.close()
    first, second = (json.loads(line) for line in log_path.read_bytes().splitlines())
    assert "parent_session_id" not in first
    assert second["parent_session_id"] == "ses_parent"
    assert AuditRecord.from_entry(second) == child
    assert AuditRecord.from_entry(first).parent_session_id is None
    assert verify_log(log_path).ok
    # The field is covered by the chain like any other: editing it is detected.
    text = log_path.read_text().replace("ses_parent", "ses_forged")
    log_path.write_text(text)
    assert not verify_log(log_path).ok
