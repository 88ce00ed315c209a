"""AuditLog.append: the chain it writes, the anchor it keeps, the files it creates and when it refuses."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading

import pytest

from seepient.audit import AuditLog, AuditLogCorrupted, AuditLogError, verify_log
from seepient.audit._chain import GENESIS_HASH


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_entries_chain_from_genesis_with_rfc8785_hashes(filled_log):
    log = filled_log(4)
    entries = [json.loads(line) for line in log.lines()]
    assert entries[0]["prev"] == GENESIS_HASH
    for before, after in zip(entries, entries[1:], strict=False):
        assert after["prev"] == before["hash"]
    for entry in entries:
        assert entry["hash"] == log.rehash(entry)
    anchor = log.anchor_json()
    assert (anchor["seq"], anchor["hash"], anchor["first_hash"]) == (
        4,
        entries[-1]["hash"],
        entries[0]["hash"],
    )
    assert anchor["genesis"] == GENESIS_HASH


def test_append_returns_the_position_of_the_durable_line(log_path, record_factory):
    log = AuditLog(log_path)
    first = log.append(record_factory(1))
    second = log.append(record_factory(2))
    assert (first.seq, first.prev) == (1, GENESIS_HASH)
    assert (second.seq, second.prev) == (2, first.hash)
    assert json.loads(log_path.read_bytes().splitlines()[-1])["hash"] == second.hash


def test_files_are_private_even_under_a_permissive_umask(tmp_path, record_factory):
    path = tmp_path / "fresh" / "nested" / "audit.log"
    previous = os.umask(0)
    try:
        AuditLog(path).append(record_factory(1))
    finally:
        os.umask(previous)
    assert _mode(path.parent) == 0o700
    assert _mode(path) == 0o600
    assert _mode(path.with_name("audit.log.anchor")) == 0o600
    assert _mode(path.with_name("audit.log.lock")) == 0o600
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_symlink_at_the_log_path_is_refused(tmp_path, record_factory):
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_bytes(b"")
    path = tmp_path / "home" / "audit.log"
    path.parent.mkdir()
    path.symlink_to(elsewhere)
    with pytest.raises(AuditLogError, match="cannot open the audit log"):
        AuditLog(path).append(record_factory(1))
    assert elsewhere.read_bytes() == b""


def test_anchor_exists_before_the_first_record(log_path, record_factory, monkeypatch):
    # Stop the very first append right after the anchor was created: the log must then be empty, never a
    # record without an anchor (which append and verify both treat as a removed anchor).
    import seepient.audit.log as log_module

    def _refuse(entry):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(log_module, "encode_line", _refuse)
    with pytest.raises(OSError, match="No space"):
        AuditLog(log_path).append(record_factory(1))
    assert log_path.read_bytes() == b""
    assert json.loads(log_path.with_name("audit.log.anchor").read_bytes())["seq"] == 0
    monkeypatch.undo()
    assert verify_log(log_path).ok
    assert AuditLog(log_path).append(record_factory(1)).seq == 1


def test_append_adopts_a_record_written_before_the_anchor_update(filled_log, record_factory):
    log = filled_log(3)
    stale_anchor = log.anchor.read_bytes()
    AuditLog(log.path).append(record_factory(4))
    log.anchor.write_bytes(stale_anchor)  # as if the writer died between the line's fsync and the anchor

    report = verify_log(log.path)
    assert report.ok and report.records == 4
    assert any("after the head anchor" in note for note in report.warnings)

    assert AuditLog(log.path).append(record_factory(5)).seq == 5
    report = verify_log(log.path)
    assert report.ok and report.records == 5 and report.warnings == ()


def test_append_reads_only_the_tail(filled_log, record_factory):
    # Damage the first record: an append that re-read the file would trip over it; this one chains on from
    # the anchored tail, and verification still points at the damage.
    log = filled_log(5)
    lines = log.lines()
    lines[0] = lines[0].replace(b'"surface":"cli"', b'"surface":"tui"')
    log.write_lines(lines)
    assert AuditLog(log.path).append(record_factory(6)).seq == 6
    report = verify_log(log.path)
    assert not report.ok and report.first_bad_seq == 1


def test_append_finds_the_head_behind_a_large_torn_tail(filled_log, record_factory):
    log = filled_log(2)
    with log.path.open("ab") as stream:
        stream.write(b'{"seq":3,"prev":"' + b"a" * 300_000)
    assert AuditLog(log.path).append(record_factory(3)).seq == 4
    report = verify_log(log.path)
    assert report.ok and report.records == 4


@pytest.mark.parametrize(
    "damage",
    ["delete anchor", "corrupt anchor", "truncate log", "delete log", "replace last record"],
)
def test_append_refuses_to_chain_onto_a_log_that_disagrees_with_its_anchor(
    filled_log, record_factory, damage
):
    log = filled_log(3)
    before_anchor = log.anchor.read_bytes()
    if damage == "delete anchor":
        log.anchor.unlink()
    elif damage == "corrupt anchor":
        log.anchor.write_bytes(b'{"format": "seepient-audit-anchor/1", "seq": "three"}')
    elif damage == "truncate log":
        log.write_lines(log.lines()[:2])
    elif damage == "delete log":
        log.path.unlink()
    else:
        entry = log.entry(3)
        log.set_entry(3, {**entry, "outcome": {**entry["outcome"], "status": "error"}}, rehash=True)
    size_before = log.path.stat().st_size if log.path.exists() else None

    with pytest.raises(AuditLogCorrupted, match="audit verify"):
        AuditLog(log.path).append(record_factory(4))
    assert (log.path.stat().st_size if log.path.exists() else None) == size_before
    if damage in ("truncate log", "delete log", "replace last record"):
        assert log.anchor.read_bytes() == before_anchor


def test_threads_sharing_one_log_object_do_not_interleave(log_path, record_factory):
    log = AuditLog(log_path)
    seqs: list[int] = []
    guard = threading.Lock()

    def _writer(base: int) -> None:
        for index in range(base, base + 15):
            entry = log.append(record_factory(index))
            with guard:
                seqs.append(entry.seq)

    threads = [threading.Thread(target=_writer, args=(n * 100,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seqs) == list(range(1, 61))
    report = verify_log(log_path)
    assert report.ok and report.records == 60


async def test_aappend_runs_off_the_event_loop(log_path, record_factory):
    log = AuditLog(log_path)
    entries = await asyncio.gather(*(log.aappend(record_factory(i)) for i in range(1, 9)))
    assert sorted(entry.seq for entry in entries) == list(range(1, 9))
    assert verify_log(log_path).records == 8


def test_lock_timeout_gives_a_clear_error(log_path, record_factory):
    from filelock import FileLock

    AuditLog(log_path).append(record_factory(1))
    holder = FileLock(log_path.with_name("audit.log.lock"))
    with holder:
        # filelock is re-entrant per thread, so the competing writer must live in another thread.
        errors: list[Exception] = []

        def _try() -> None:
            try:
                AuditLog(log_path, lock_timeout=0.2).append(record_factory(2))
            except AuditLogError as error:
                errors.append(error)

        worker = threading.Thread(target=_try)
        worker.start()
        worker.join()
    assert len(errors) == 1 and "could not lock" in str(errors[0])
    assert verify_log(log_path).records == 1
