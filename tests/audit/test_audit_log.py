"""AuditLog.append: the chain it writes, the anchor it keeps, the files it creates and when it refuses."""

from __future__ import annotations

import asyncio
import fcntl
import gc
import json
import multiprocessing
import os
import stat
import subprocess
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


def test_anchor_exists_before_the_first_record(filled_log, log_path, record_factory, monkeypatch):
    # Stop the very first append right after the anchor was created: the log must then be empty, never a
    # record without an anchor (which append and verify both treat as a removed anchor).
    import seepient.audit.log as log_module

    def _refuse(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(log_module, "encode_entry", _refuse)
    with pytest.raises(OSError, match="No space"):
        AuditLog(log_path).append(record_factory(1))
    assert log_path.read_bytes() == b""
    assert filled_log(0).anchor_json()["seq"] == 0
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


@pytest.mark.parametrize("writer", ["fresh", "long-lived", "preloaded"])
@pytest.mark.parametrize(
    "damage",
    [
        "delete anchor",
        "corrupt anchor",
        "garble anchor in place",
        "anchor names a later record",
        "truncate log",
        "delete log",
        "replace last record",
        "edit last record in place",
        "replace log with a copy",
    ],
)
def test_append_refuses_to_chain_onto_a_log_that_disagrees_with_its_anchor(
    filled_log, log_path, record_factory, damage, writer
):
    # "long-lived" is the object that wrote the log and remembers its head: it must notice every change
    # a fresh object notices, including same-size edits made right after its own append. "preloaded" read
    # the head before the damage (as a session does while its first model request is out).
    long_lived = AuditLog(log_path)
    for index in range(1, 4):
        long_lived.append(record_factory(index))
    preloaded = AuditLog(log_path)
    preloaded.preload()
    log = filled_log(0)
    before_anchor = log.anchor.read_bytes()
    if damage == "delete anchor":
        log.anchor.unlink()
    elif damage == "corrupt anchor":
        log.anchor.write_bytes(b'{"format": "seepient-audit-anchor/1", "seq": "three"}')
    elif damage == "garble anchor in place":
        with log.anchor.open("r+b") as stream:
            stream.write(bytes(byte ^ 0x20 for byte in before_anchor))
    elif damage == "anchor names a later record":
        log.write_anchor({**log.anchor_json(), "seq": 9, "hash": "e" * 64})
    elif damage == "truncate log":
        log.write_lines(log.lines()[:2])
    elif damage == "delete log":
        log.path.unlink()
    elif damage == "replace last record":
        entry = log.entry(3)
        log.set_entry(3, {**entry, "outcome": {**entry["outcome"], "status": "error"}}, rehash=True)
    elif damage == "edit last record in place":
        entry = log.entry(3)
        forged = {**entry, "outcome": {**entry["outcome"], "status": "no"}}  # "ok" -> "no": same size
        forged["hash"] = log.rehash(forged)
        with log.path.open("r+b") as stream:
            stream.seek(sum(len(line) for line in log.lines()[:2]))
            stream.write(json.dumps(forged, separators=(",", ":"), ensure_ascii=False).encode())
        assert log.entry(3) == forged
    else:
        copy = log.path.with_name("copy.log")
        copy.write_bytes(log.path.read_bytes())
        os.replace(copy, log.path)
    size_before = log.path.stat().st_size if log.path.exists() else None
    anchor_before = log.anchor.read_bytes() if log.anchor.exists() else None

    appender = {"long-lived": long_lived, "preloaded": preloaded}.get(writer) or AuditLog(log.path)
    if damage == "replace log with a copy":
        # Same bytes in a new file: nothing to refuse, but the writer must follow the path to the new file.
        assert appender.append(record_factory(4)).seq == 4
        assert verify_log(log.path).records == 4
        return
    with pytest.raises(AuditLogCorrupted, match="audit verify"):
        appender.append(record_factory(4))
    assert (log.path.stat().st_size if log.path.exists() else None) == size_before
    assert (log.anchor.read_bytes() if log.anchor.exists() else None) == anchor_before


def test_a_preloaded_head_is_what_the_first_record_chains_on_without_reading_it_again(
    filled_log, monkeypatch, record_factory
):
    log = filled_log(3)
    writer = AuditLog(log.path)
    writer.preload()
    reads: list[int] = []
    real = writer._load_head
    monkeypatch.setattr(writer, "_load_head", lambda: reads.append(1) or real())
    entry = writer.append(record_factory(4))
    assert (entry.seq, entry.prev) == (4, log.entry(3)["hash"])
    assert reads == []
    report = verify_log(log.path)
    assert report.ok and report.records == 4


def test_preloading_a_log_that_does_not_exist_creates_nothing(log_path):
    AuditLog(log_path).preload()
    assert not log_path.exists() and not log_path.with_name("audit.log.anchor").exists()


def test_a_preloaded_head_is_dropped_when_another_writer_appends_first(log_path, record_factory):
    first, second = AuditLog(log_path), AuditLog(log_path)
    first.append(record_factory(1))
    preloaded = AuditLog(log_path)
    preloaded.preload()
    second.append(record_factory(2))
    assert preloaded.append(record_factory(3)).seq == 3
    report = verify_log(log_path)
    assert report.ok and report.records == 3


def test_a_torn_tail_found_by_preloading_is_sealed_by_the_first_record(filled_log, record_factory):
    log = filled_log(2)
    with log.path.open("ab") as stream:
        stream.write(b'{"seq":3,"prev":"torn')
    writer = AuditLog(log.path)
    writer.preload()
    assert writer.append(record_factory(3)).seq == 4
    report = verify_log(log.path)
    assert report.ok and report.records == 4


def test_a_long_lived_log_chains_after_records_another_writer_added(log_path, record_factory):
    first, second = AuditLog(log_path), AuditLog(log_path)
    first.append(record_factory(1))
    second.append(record_factory(2))
    second.append(record_factory(3))
    entry = first.append(record_factory(4))
    assert (entry.seq, entry.prev) == (4, json.loads(log_path.read_bytes().splitlines()[2])["hash"])
    report = verify_log(log_path)
    assert report.ok and report.records == 4 and report.warnings == ()


def test_a_long_lived_log_follows_a_log_moved_aside(log_path, record_factory):
    # The documented recovery: move the log and its anchor aside. A running writer must start the new log,
    # not keep appending to the files it still holds open.
    log = AuditLog(log_path)
    for index in range(1, 3):
        log.append(record_factory(index))
    aside = log_path.with_name("evidence.log")
    os.rename(log_path, aside)
    os.rename(log_path.with_name("audit.log.anchor"), aside.with_name("evidence.log.anchor"))
    assert log.append(record_factory(3)).seq == 1
    assert verify_log(log_path).records == 1
    assert verify_log(aside).records == 2


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


def test_separate_log_objects_in_threads_form_one_chain(log_path, record_factory):
    # Each object holds its own lock descriptor; flock must exclude them from one another, not only
    # other processes.
    barrier = threading.Barrier(4)

    def _writer(base: int) -> None:
        log = AuditLog(log_path)
        barrier.wait()
        for index in range(base, base + 15):
            log.append(record_factory(index))

    threads = [threading.Thread(target=_writer, args=(n * 100,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = verify_log(log_path)
    assert report.ok and report.records == 60, report.problem
    assert [json.loads(line)["seq"] for line in log_path.read_bytes().splitlines()] == list(range(1, 61))


_FORK = multiprocessing.get_context("fork")


def _hold_the_lock(lock_path, held, release) -> None:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    held.set()
    release.wait(30)


def test_the_lock_excludes_another_process(log_path, record_factory):
    log = AuditLog(log_path, lock_timeout=0.3)
    log.append(record_factory(1))  # the object now keeps its lock file open between appends
    held, release = _FORK.Event(), _FORK.Event()
    holder = _FORK.Process(target=_hold_the_lock, args=(log_path.with_name("audit.log.lock"), held, release))
    holder.start()
    try:
        assert held.wait(30)
        with pytest.raises(AuditLogError, match="could not lock"):
            log.append(record_factory(2))
    finally:
        release.set()
        holder.join(timeout=30)
    assert log.append(record_factory(2)).seq == 2
    assert verify_log(log_path).records == 2


def _append_through_an_inherited_object(log, count, barrier, make_record, worker) -> None:
    barrier.wait()
    for index in range(count):
        log.append(make_record(index, session=f"child_{worker}"))


def test_a_log_object_inherited_through_fork_still_excludes_its_parent(log_path, record_factory):
    # A forked child shares the parent's open file descriptions, and with them its flock: the child must
    # open its own, or parent and child would both be "holding" the lock at once.
    log = AuditLog(log_path)
    log.append(record_factory(0))
    barrier = _FORK.Barrier(3)
    children = [
        _FORK.Process(target=_append_through_an_inherited_object, args=(log, 30, barrier, record_factory, n))
        for n in range(2)
    ]
    for child in children:
        child.start()
    barrier.wait()
    for index in range(30):
        log.append(record_factory(index, session="parent"))
    for child in children:
        child.join(timeout=120)
        assert child.exitcode == 0
    report = verify_log(log_path)
    assert report.ok and report.records == 91, report.problem


def test_a_removed_lock_file_is_followed_not_locked_as_an_orphan(log_path, record_factory):
    from filelock import FileLock

    log = AuditLog(log_path, lock_timeout=0.3)
    log.append(record_factory(1))
    lock_path = log_path.with_name("audit.log.lock")
    lock_path.unlink()
    # Another program now locks a new file at the lock path; locking the removed file would exclude nobody.
    with FileLock(lock_path), pytest.raises(AuditLogError, match="could not lock"):
        log.append(record_factory(2))
    assert log.append(record_factory(2)).seq == 2
    assert lock_path.exists()


def test_close_releases_the_open_files_and_a_later_append_reopens_them(log_path, record_factory):
    def _open_descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    gc.collect()  # objects left by earlier tests close their files when collected
    before = _open_descriptors()
    log = AuditLog(log_path)
    log.append(record_factory(1))
    assert _open_descriptors() == before + 3  # the log, its anchor and its lock file
    log.close()
    assert _open_descriptors() == before
    with log:
        assert log.append(record_factory(2)).seq == 2
    assert _open_descriptors() == before
    log.append(record_factory(3))
    del log
    gc.collect()
    assert _open_descriptors() == before
    assert verify_log(log_path).records == 3


def test_a_symlink_at_the_anchor_path_is_refused(filled_log, tmp_path, record_factory):
    log = filled_log(2)
    elsewhere = tmp_path / "elsewhere.anchor"
    elsewhere.write_bytes(log.anchor.read_bytes())
    log.anchor.unlink()
    log.anchor.symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    with pytest.raises(AuditLogCorrupted, match="anchor"):
        AuditLog(log.path).append(record_factory(3))
    assert elsewhere.read_bytes() == before
    report = verify_log(log.path)
    assert not report.ok and "anchor is damaged" in (report.problem or "")


def test_an_anchor_in_the_earlier_single_document_format_is_read_then_converted(filled_log, record_factory):
    log = filled_log(3)
    current = log.anchor_json()
    legacy = {
        "format": "seepient-audit-anchor/1",
        **{k: current[k] for k in ("genesis", "first_hash", "seq", "hash")},
    }
    log.anchor.write_text(json.dumps(legacy))
    report = verify_log(log.path)
    assert report.ok and report.records == 3 and report.warnings == ()

    assert AuditLog(log.path).append(record_factory(4)).seq == 4
    assert len(log.anchor.read_bytes()) == 1024 and log.anchor_json()["seq"] == 4
    report = verify_log(log.path)
    assert report.ok and report.records == 4 and report.warnings == ()


def test_a_cut_tail_is_still_caught_under_an_anchor_in_the_earlier_format(filled_log, record_factory):
    log = filled_log(3)
    current = log.anchor_json()
    legacy = {
        "format": "seepient-audit-anchor/1",
        **{k: current[k] for k in ("genesis", "first_hash", "seq", "hash")},
    }
    log.anchor.write_text(json.dumps(legacy))
    log.write_lines(log.lines()[:2])
    report = verify_log(log.path)
    assert not report.ok and report.first_bad_seq == 3 and "truncated" in (report.problem or "")
    with pytest.raises(AuditLogCorrupted):
        AuditLog(log.path).append(record_factory(4))


def test_a_spawned_command_inherits_no_descriptor_of_the_audit_files(log_path, record_factory):
    # The object keeps the log, anchor and lock open; a model-authored command started from this process
    # must not get a descriptor through which it could write the log, even from a spawn that keeps
    # descriptors open.
    log = AuditLog(log_path)
    log.append(record_factory(1))
    listing = subprocess.run(
        ["ls", "-l", "/proc/self/fd/"], close_fds=False, capture_output=True, text=True, check=True
    ).stdout
    assert str(log_path.parent) not in listing
    assert log._files.log is not None  # the descriptors really were open during the spawn
