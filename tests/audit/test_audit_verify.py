"""verify_log against the edits an attacker with write access to the files would make, each named by first bad seq."""

from __future__ import annotations

import hashlib
import json
import os
import random

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from seepient.audit import AuditLog, AuditLogCorrupted, format_report, verify_log
from seepient.audit._chain import (
    GENESIS_HASH,
    ChainedEntry,
    canonical_bytes,
    decode_line,
    encode_line,
    parse_json,
)

COUNT = 8


def _assert_bad(path, first_bad_seq: int, *fragments: str):
    report = verify_log(path)
    assert not report.ok, format_report(report)
    assert report.first_bad_seq == first_bad_seq, report.problem
    for fragment in fragments:
        assert fragment in (report.problem or ""), report.problem
    assert report.records <= max(first_bad_seq - 1, 0)
    return report


def test_an_intact_log_verifies(filled_log):
    log = filled_log(COUNT)
    report = verify_log(log.path)
    assert report.ok and report.exists
    assert report.records == COUNT and report.first_bad_seq is None and report.problem is None
    assert (report.head_seq, report.head_hash) == (COUNT, log.anchor_json()["hash"])
    assert report.warnings == ()
    assert f"intact: {COUNT} records verified" in format_report(report)


def test_an_absent_log_verifies_empty_and_says_so(log_path):
    report = verify_log(log_path)
    assert report.ok and not report.exists and report.records == 0
    assert "no audit log" in format_report(report) and "0 records" in format_report(report)
    assert not log_path.parent.exists()


def test_a_deleted_log_with_its_anchor_left_is_caught(filled_log):
    log = filled_log(3)
    log.path.unlink()
    _assert_bad(
        log.path,
        1,
        "the log file is missing, but its head anchor says it held 3 records (the log was deleted)",
    )


@pytest.mark.parametrize("seq", [1, 5, COUNT])
def test_any_single_byte_edit_is_caught_at_that_record(filled_log, seq):
    log = filled_log(COUNT)
    original = log.lines()
    chooser = random.Random(seq)
    offsets = chooser.sample(range(len(original[seq - 1])), 40)
    for offset in offsets:
        lines = list(original)
        line = bytearray(lines[seq - 1])
        line[offset] ^= 0x01
        lines[seq - 1] = bytes(line)
        log.write_lines(lines)
        _assert_bad(log.path, seq)


def test_edit_of_a_value_is_caught_at_that_record(filled_log):
    log = filled_log(COUNT)
    log.write_lines([line.replace(b'"detail":"record 5"', b'"detail":"record 9"') for line in log.lines()])
    _assert_bad(log.path, 5, "was edited")


@pytest.mark.parametrize(
    ("seq", "fragment"), [(1, "first record"), (4, "hash recomputed"), (COUNT, "replaced")]
)
def test_edit_with_the_record_hash_recomputed_is_caught_at_that_record(filled_log, seq, fragment):
    log = filled_log(COUNT)
    entry = log.entry(seq)
    log.set_entry(seq, {**entry, "outcome": {**entry["outcome"], "status": "denied"}}, rehash=True)
    _assert_bad(log.path, seq, fragment)


def test_whitespace_and_key_order_do_not_count_as_edits_but_are_reported(filled_log):
    log = filled_log(COUNT)
    lines = log.lines()
    spaced = json.loads(lines[2])
    lines[2] = json.dumps(spaced, indent=None, separators=(" , ", " : ")).encode() + b"\n"
    reordered = json.loads(lines[5])
    lines[5] = json.dumps(dict(reversed(list(reordered.items())))).encode() + b"\n"
    log.write_lines(lines)
    report = verify_log(log.path)
    assert report.ok and report.records == COUNT
    assert [note.split()[1] for note in report.warnings] == ["3", "6"]


def test_a_semantic_edit_hidden_in_reformatting_is_caught(filled_log):
    log = filled_log(COUNT)
    lines = log.lines()
    entry = json.loads(lines[2])
    entry["model"] = "openai:gpt-evil"
    lines[2] = json.dumps(entry, indent=2).replace("\n", " ").encode() + b"\n"
    log.write_lines(lines)
    _assert_bad(log.path, 3, "was edited")


def test_a_duplicated_key_that_would_fool_a_first_wins_reader_is_caught(filled_log):
    # The hash is computed over the last value (what Python reads), so it still matches; a reader that keeps
    # the first value would see "denied". The verifier refuses the ambiguity.
    log = filled_log(COUNT)
    entry = log.entry(4)
    line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
    forged = line.replace('"seq":4,', '"seq":4,"outcome":{"status":"denied"},', 1)
    lines = log.lines()
    lines[3] = forged.encode() + b"\n"
    log.write_lines(lines)
    _assert_bad(log.path, 4, "twice")


@pytest.mark.parametrize(
    ("seq", "fragment"), [(1, "head was deleted"), (4, "record 4 was deleted"), (COUNT, "truncated")]
)
def test_a_deleted_record_is_caught(filled_log, seq, fragment):
    log = filled_log(COUNT)
    lines = log.lines()
    del lines[seq - 1]
    log.write_lines(lines)
    _assert_bad(log.path, seq, fragment)


def test_a_deleted_head_is_caught_at_seq_1(filled_log):
    log = filled_log(COUNT)
    log.write_lines(log.lines()[2:])
    _assert_bad(log.path, 1, "starts at seq 3", "records 1–2 are missing")


@pytest.mark.parametrize("seq", [1, 4, COUNT])
def test_a_duplicated_line_is_caught_where_it_was_inserted(filled_log, seq):
    log = filled_log(COUNT)
    lines = log.lines()
    lines.insert(seq, lines[seq - 1])
    log.write_lines(lines)
    _assert_bad(log.path, seq + 1, "repeats")


def test_an_inserted_forged_record_chained_to_its_predecessor_is_caught(filled_log):
    log = filled_log(COUNT)
    real = log.entry(4)
    forged = {**real, "model": "openai:forged", "outcome": {"status": "ok", "detail": "nothing happened"}}
    forged["hash"] = log.rehash(forged)
    lines = log.lines()
    lines.insert(3, json.dumps(forged).encode() + b"\n")
    log.write_lines(lines)
    _assert_bad(log.path, 4, "two different records claim seq 4")


@pytest.mark.parametrize(("first", "second", "bad"), [(3, 4, 3), (2, 6, 2), (1, COUNT, 1)])
def test_reordered_records_are_caught(filled_log, first, second, bad):
    log = filled_log(COUNT)
    lines = log.lines()
    lines[first - 1], lines[second - 1] = lines[second - 1], lines[first - 1]
    log.write_lines(lines)
    _assert_bad(log.path, bad)


def test_moving_the_last_record_to_the_front_is_caught(filled_log):
    log = filled_log(COUNT)
    lines = log.lines()
    log.write_lines([lines[-1], *lines[:-1]])
    _assert_bad(log.path, 1, "head was deleted")


def test_truncation_at_any_offset_is_caught_at_the_first_missing_record(filled_log):
    log = filled_log(COUNT)
    whole = log.path.read_bytes()
    chooser = random.Random(8785)
    offsets = {
        0,
        1,
        len(whole) - 1,
        whole.index(b"\n"),
        whole.index(b"\n") + 1,
        *chooser.sample(range(len(whole)), 150),
    }
    for offset in sorted(offsets):
        kept = whole[:offset]
        log.path.write_bytes(kept)
        report = _assert_bad(log.path, kept.count(b"\n") + 1)
        assert "truncated" in (report.problem or "")


def test_a_deleted_anchor_is_caught(filled_log):
    log = filled_log(COUNT)
    log.anchor.unlink()
    _assert_bad(log.path, COUNT + 1, "anchor", "missing")


def test_a_deleted_anchor_with_the_tail_cut_is_caught(filled_log):
    log = filled_log(COUNT)
    log.anchor.unlink()
    log.write_lines(log.lines()[:5])
    _assert_bad(log.path, 6, "anchor", "missing")


def test_an_anchor_whose_seq_alone_was_moved_back_is_caught(filled_log):
    log = filled_log(COUNT)
    log.write_lines(log.lines()[:5])
    log.write_anchor({**log.anchor_json(), "seq": 5})
    _assert_bad(log.path, 5, "head anchor")


def test_emptying_the_log_and_resetting_the_anchor_but_leaving_its_first_hash_is_caught(filled_log):
    log = filled_log(COUNT)
    log.path.write_bytes(b"")
    log.write_anchor({**log.anchor_json(), "seq": 0, "hash": GENESIS_HASH})
    report = _assert_bad_anchor(log.path)
    assert "first record" in (report.problem or "")


def _assert_bad_anchor(path):
    report = verify_log(path)
    assert not report.ok and "anchor is damaged" in (report.problem or "")
    return report


def test_a_garbled_anchor_is_caught(filled_log):
    log = filled_log(COUNT)
    log.anchor.write_bytes(b"{not json")
    _assert_bad_anchor(log.path)


def test_an_anchor_that_is_not_a_regular_file_is_caught_and_never_opened_blocking(filled_log):
    log = filled_log(COUNT)
    log.anchor.unlink()
    os.mkfifo(log.anchor)
    report = _assert_bad_anchor(log.path)
    assert "is not a regular file, so it cannot be the head anchor" in (report.problem or "")


def test_a_log_swapped_for_another_valid_log_is_caught_at_seq_1(filled_log, tmp_path, record_factory):
    log = filled_log(COUNT)
    other = tmp_path / "other" / "audit.log"
    writer = AuditLog(other)
    for index in range(1, COUNT + 1):
        writer.append(record_factory(index))
    log.path.write_bytes(other.read_bytes())
    _assert_bad(log.path, 1, "began with")


def test_a_consistent_rewrite_of_an_unsigned_log_and_anchor_is_the_documented_limit(filled_log):
    # Without a signing key, whoever can rewrite both files can cut the tail and re-point the anchor at the new
    # last record. The report then shows the shorter head; a signed head (test_audit_signing.py) catches it.
    log = filled_log(COUNT)
    log.write_lines(log.lines()[:5])
    log.write_anchor({**log.anchor_json(), "seq": 5, "hash": log.entry(5)["hash"]})
    report = verify_log(log.path)
    assert report.ok and report.head_seq == 5 and report.records == 5


@pytest.mark.parametrize(
    "junk", [b"not json at all\n", b"\n", b"[1, 2, 3]\n", b'{"seq": 5}\n', b"\xff\xfe\n"]
)
def test_a_foreign_line_in_the_middle_is_caught(filled_log, junk):
    log = filled_log(COUNT)
    lines = log.lines()
    lines.insert(4, junk)
    log.write_lines(lines)
    _assert_bad(log.path, 5, "line 5")


def test_a_torn_last_line_is_reported_precisely_then_sealed_by_the_next_append(filled_log, record_factory):
    log = filled_log(COUNT)
    torn = log.lines()[2][:123]
    with log.path.open("ab") as stream:
        stream.write(torn)
    report = _assert_bad(log.path, COUNT + 1, "incomplete line of 123 bytes", "next append seals")
    assert report.records == COUNT

    entry = AuditLog(log.path).append(record_factory(COUNT + 1))
    assert entry.seq == COUNT + 2
    report = verify_log(log.path)
    assert report.ok and report.records == COUNT + 2
    assert any(f"seq {COUNT + 1} seals 124 bytes" in note for note in report.warnings)
    assert torn in log.path.read_bytes()  # nothing hidden: the torn bytes stay where they were


def test_sealed_torn_bytes_edited_later_are_caught(filled_log, record_factory):
    log = filled_log(3)
    with log.path.open("ab") as stream:
        stream.write(b'{"seq":4,"prev":"abc')
    AuditLog(log.path).append(record_factory(4))
    log.path.write_bytes(log.path.read_bytes().replace(b'"prev":"abc', b'"prev":"abd'))
    _assert_bad(log.path, 4, "changed after sealing")


def test_a_forged_torn_tail_with_nothing_to_seal_is_caught(filled_log):
    log = filled_log(3)
    forged = {
        "seq": 4,
        "prev": log.entry(3)["hash"],
        "type": "torn_tail",
        "torn_length": 0,
        "torn_sha256": "0" * 64,
    }
    forged["hash"] = log.rehash(forged)
    with log.path.open("ab") as stream:
        stream.write(json.dumps(forged).encode() + b"\n")
    _assert_bad(log.path, 4, "no torn bytes")


def test_format_report_names_the_failure(filled_log):
    log = filled_log(3)
    log.write_lines(log.lines()[:2])
    text = format_report(verify_log(log.path))
    assert "FAILED verification at seq 3" in text and "2 records before that point verify" in text


def test_a_large_log_streams_through_with_the_right_count(tmp_path, record_factory, log_file):
    path = tmp_path / "audit.log"
    template = record_factory(1).to_json()
    prev, first = GENESIS_HASH, None
    count = 10_000
    with path.open("wb") as stream:
        for seq in range(1, count + 1):
            # Each record is its own action: one action recorded twice is an error of its own.
            action = {**template["action"], "id": f"act_{seq}"}
            line, prev = encode_line({"seq": seq, "prev": prev, **template, "action": action})
            first = first or prev
            stream.write(line)
    log_file(path).write_anchor({"genesis": GENESIS_HASH, "first_hash": first, "seq": count, "hash": prev})
    report = verify_log(path)
    assert report.ok and report.records == count and report.head_hash == prev


# Strings and keys that sit on the edges of RFC 8785's rules: DEL and U+2028 (raw in RFC 8785, escaped by
# some encoders), control characters (short and \\u00hh escapes), and keys that sort differently by code
# point than by UTF-16 code unit (U+E000 and up against a character beyond U+FFFF).
_edge_text = st.sampled_from(
    [
        "\x7f",
        "a\x7fb",
        "\u2028",
        "\u2029",
        "\x00",
        "\x1f",
        "\x08\x0c\n\r\t",
        '"\\/',
        "\ufeff",
        "é",
        "\ue000",
        "\U0001f600",
    ]
)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.text(alphabet=st.characters(max_codepoint=0x7F))
    | _edge_text
)
_keys = st.text(max_size=8) | _edge_text | st.sampled_from(["\ue000a", "\U0001f600a", "\uffff", "\U00010000"])
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_keys, _json_values, max_size=6))
@example({"note": "a\x7fb"})
@example({"\ue000": 1, "\U0001f600": 2, "a": {"\uffff": [], "\U00010000": None}})
@example({"line_separator": "\u2028", "controls": "\x00\x1f\x7f", "float": 1.0, "tiny": 2.5e-07})
@example({"lone": "\udcff"})
def test_what_append_hashes_is_rfc8785_and_the_verifier_agrees(fields):
    fields = {k: v for k, v in fields.items() if k not in ("seq", "prev", "hash")}
    entry = {"seq": 1, "prev": GENESIS_HASH, **fields}
    try:
        expected = rfc8785.dumps(entry)
    except ValueError:
        # Lone surrogates: RFC 8785 has no bytes for them, so the writer must refuse them too.
        with pytest.raises(ValueError):
            encode_line(entry)
        return
    line, digest = encode_line(entry)
    # The hash append writes is the SHA-256 of RFC 8785 itself, computed here by the reference library...
    assert digest == hashlib.sha256(expected).hexdigest()
    # ...on a line that is exactly the compact JSON of the entry with its hash last,
    assert (
        line
        == json.dumps({**entry, "hash": digest}, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    )
    # ...whose fast canonical form, wherever it is taken, is byte for byte RFC 8785,
    body = line[:-1]
    value, exact = parse_json(body.decode(), body)
    without_hash = {k: v for k, v in value.items() if k != "hash"}
    assert canonical_bytes(without_hash, exact) == expected
    if not exact:
        assert canonical_bytes(without_hash, False) == rfc8785.dumps(without_hash)
    # ...and which the verifier accepts as written.
    decoded = decode_line(body, 1)
    assert isinstance(decoded, ChainedEntry) and decoded.hash == digest and not decoded.reformatted
    # Reformatted by another tool (every non-ASCII character escaped, surrogate pairs included; other
    # separators), the line still hashes the same, and is reported as reformatted when its bytes differ.
    escaped = json.dumps(json.loads(body), ensure_ascii=True, separators=(", ", ": ")).encode()
    decoded = decode_line(escaped, 1)
    assert isinstance(decoded, ChainedEntry) and decoded.hash == digest
    assert decoded.reformatted == (escaped != body)


def _containing_itself() -> dict:
    loop: dict = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(
    "value", [2**53, -(2**53), 2**60, float("nan"), float("inf"), "\udcff", {1: "number key"}, {"x": {1, 2}}]
)
def test_values_rfc8785_cannot_express_are_refused_before_anything_is_written(log_path, value):
    log = AuditLog(log_path)
    with pytest.raises((ValueError, TypeError)):
        log.append({"type": "note", "value": value})
    assert not log_path.exists() or log_path.read_bytes() == b""


def test_a_record_that_contains_itself_is_refused_clearly(log_path):
    with pytest.raises(ValueError, match="contains itself"):
        AuditLog(log_path).append({"type": "note", "value": _containing_itself()})
    assert not log_path.exists()


def test_records_on_the_edges_of_rfc8785_verify(log_path):
    # Each of these once could, or might, make a fast path disagree with RFC 8785: DEL was escaped by the
    # verifier's fast path, so a record holding it failed verification as "edited".
    log = AuditLog(log_path)
    records = [
        {"type": "note", "command": "printf 'a\x7fb'"},
        {"type": "note", "text": "\u2028\u2029\ufeff", "controls": "\x00\x07\x1b"},
        {"type": "note", "\ue000": "private use", "\U0001f600": "beyond the BMP"},
        {"type": "note", "ratio": 0.1, "big": 1e21, "small": -5e-324},
        {"type": "note", "pair": ("a", 1)},  # a tuple is stored as an array and hashed as one
    ]
    for record in records:
        log.append(record)
    report = verify_log(log_path)
    assert report.ok and report.records == len(records) and report.warnings == (), report.problem
    stored = [json.loads(line) for line in log_path.read_bytes().splitlines()]
    for entry in stored:
        assert (
            entry["hash"]
            == hashlib.sha256(rfc8785.dumps({k: v for k, v in entry.items() if k != "hash"})).hexdigest()
        )
    assert stored[-1]["pair"] == ["a", 1]


def _garble(slot: bytes) -> bytes:
    return slot[:100] + bytes(byte ^ 0x20 for byte in slot[100:200]) + slot[200:]


def test_one_damaged_anchor_slot_falls_back_to_the_other_with_a_warning(filled_log, record_factory):
    log = filled_log(COUNT)
    raw = log.anchor.read_bytes()
    newest = [slot["seq"] if slot else -1 for slot in log.anchor_slots()].index(COUNT)
    slots = [raw[:512], raw[512:]]
    slots[newest] = _garble(slots[newest])
    log.anchor.write_bytes(b"".join(slots))
    report = verify_log(log.path)
    assert report.ok and report.records == COUNT
    assert any("slot of the head anchor" in note and f"slot {newest}" in note for note in report.warnings)
    assert any("after the head anchor" in note for note in report.warnings)  # the other slot is one behind
    assert AuditLog(log.path).append(record_factory(COUNT + 1)).seq == COUNT + 1
    report = verify_log(log.path)
    assert report.ok and report.warnings == ()
    assert None not in log.anchor_slots()


def test_a_damaged_slot_does_not_hide_a_cut_tail(filled_log):
    # Falling back to the older slot must still catch records removed before that slot's seq.
    log = filled_log(COUNT)
    raw = log.anchor.read_bytes()
    log.anchor.write_bytes(_garble(raw[:512]) + raw[512:])
    log.write_lines(log.lines()[: COUNT - 3])
    _assert_bad(log.path, COUNT - 2, "truncated")


def test_both_anchor_slots_damaged_is_reported_not_trusted(filled_log, record_factory):
    log = filled_log(COUNT)
    raw = log.anchor.read_bytes()
    log.anchor.write_bytes(_garble(raw[:512]) + _garble(raw[512:]))
    report = _assert_bad_anchor(log.path)
    assert "slot 0" in (report.problem or "") and "slot 1" in (report.problem or "")
    with pytest.raises(AuditLogCorrupted):
        AuditLog(log.path).append(record_factory(COUNT + 1))


@pytest.mark.parametrize("change", ["other first record", "same seq, other record"])
def test_anchor_slots_that_contradict_each_other_are_caught(filled_log, change):
    log = filled_log(COUNT)
    newest = log.anchor_json()
    if change == "other first record":
        older = {**newest, "seq": COUNT - 1, "hash": log.entry(COUNT - 1)["hash"], "first_hash": "f" * 64}
    else:
        older = {**newest, "hash": "f" * 64}
    log.write_anchor_slots(newest, older)  # each slot passes its own check; together they disagree
    _assert_bad_anchor(log.path)


def test_after_a_power_loss_the_anchor_may_lag_far_behind_and_the_next_append_re_anchors(
    filled_log, record_factory
):
    # The anchor is not fsynced per append: after a power loss its page may hold an anchor from many
    # appends ago (never a later one). Verification accepts the records after it, with a warning.
    log = filled_log(2)
    on_disk = log.anchor.read_bytes()
    writer = AuditLog(log.path)
    for index in range(3, 41):
        writer.append(record_factory(index))
    log.anchor.write_bytes(on_disk)
    report = verify_log(log.path)
    assert report.ok and report.records == 40
    assert any("records 3–40 come after the head anchor" in note for note in report.warnings)

    assert AuditLog(log.path).append(record_factory(41)).seq == 41
    report = verify_log(log.path)
    assert report.ok and report.records == 41 and report.warnings == ()


def test_an_unreadable_log_is_a_clear_failure_not_a_crash(tmp_path):
    path = tmp_path / "audit.log"
    path.mkdir()
    report = verify_log(path)
    assert not report.ok and report.first_bad_seq is None
    assert "cannot be read" in (report.problem or "")
