"""``append_settling``: the record's line is written, in order, before the call returns; its fsync and signed
checkpoint finish on the log's worker thread, and the next append, ``close``, another writer and the process's
exit all wait for them. A failed fsync is never forgotten: the next append (or ``close``) raises it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from seepient.audit import AuditLog, AuditLogError
from seepient.audit import log as log_module
from tests.audit.conftest import SignedLog, make_record, read_anchor_slots
from tests.conftest import REPO


def _anchored_seq(anchor: Path) -> int:
    return max(slot["seq"] for slot in read_anchor_slots(anchor.read_bytes()) if slot is not None)


def test_the_line_is_written_before_it_returns_and_anchored_once_settled(signed_log):
    log = signed_log(2)
    writer = log.writer()
    entry = writer.append_settling(make_record(3))
    assert entry.seq == 3 and json.loads(log.lines()[-1])["seq"] == 3
    writer.wait_settled()
    assert _anchored_seq(log.anchor) == 3
    writer.close()
    report = log.verify()
    assert report.ok and report.records == 3 and report.signature == "valid" and report.checkpoint_seq == 3
    assert not report.warnings, report.warnings


def test_records_stay_in_order_between_settling_and_durable_appends(signed_log):
    log = signed_log(0)
    writer = log.writer()
    for index in range(1, 9):
        append = writer.append_settling if index % 2 else writer.append
        assert append(make_record(index)).seq == index
    writer.close()
    assert [json.loads(line)["seq"] for line in log.lines()] == list(range(1, 9))
    report = log.verify()
    assert report.ok and report.checkpoint_seq == 8 and not report.warnings, report.warnings


def test_the_next_append_waits_for_the_settling_fsync(signed_log, monkeypatch):
    log = signed_log(1)
    writer = log.writer()
    release = threading.Event()
    real_fsync = log_module.os.fsync
    held: list[str] = []

    def slow_fsync(fd: int) -> None:
        if threading.current_thread().name == "seepient-audit-settler" and not held:
            held.append("settler")
            assert release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(log_module.os, "fsync", slow_fsync)
    writer.append_settling(make_record(2))
    finished = threading.Event()

    def next_append() -> None:
        writer.append(make_record(3))
        finished.set()

    thread = threading.Thread(target=next_append)
    thread.start()
    # The durable append is held behind the settling record's fsync, and only that.
    assert not finished.wait(0.3)
    release.set()
    thread.join(10)
    assert finished.is_set() and held == ["settler"]
    writer.close()
    report = log.verify()
    assert report.ok and report.checkpoint_seq == 3 and not report.warnings, report.warnings


def test_another_writer_waits_for_the_settling_record(signed_log, monkeypatch):
    log = signed_log(1)
    first, second = log.writer(), log.writer()
    release = threading.Event()
    real_fsync = log_module.os.fsync

    def slow_fsync(fd: int) -> None:
        if threading.current_thread().name == "seepient-audit-settler":
            release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(log_module.os, "fsync", slow_fsync)
    first.append_settling(make_record(2))
    timer = threading.Timer(0.3, release.set)
    timer.start()
    # The settling record holds the cross-process lock until it is anchored, so the other writer chains after it.
    assert second.append(make_record(3)).seq == 3
    timer.join()
    first.close()
    second.close()
    report = log.verify()
    assert report.ok and report.records == 3 and not report.warnings, report.warnings


def test_a_failed_settling_fsync_is_raised_by_the_next_append_and_close(signed_log, monkeypatch):
    log = signed_log(1)
    writer = log.writer()
    real_fsync = log_module.os.fsync

    def failing_fsync(fd: int) -> None:
        if threading.current_thread().name == "seepient-audit-settler":
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(log_module.os, "fsync", failing_fsync)
    writer.append_settling(make_record(2))
    with pytest.raises(AuditLogError, match="could not be made durable"):
        writer.append(make_record(3))
    # Raised once: the log reads its head afresh, and the record that was never anchored is marked found
    # unsigned by the next signed append, as a writer killed mid-append leaves it.
    assert writer.append(make_record(4)).seq == 4
    writer.append_settling(make_record(5))
    with pytest.raises(AuditLogError, match="could not be made durable"):
        writer.close()
    monkeypatch.setattr(log_module.os, "fsync", real_fsync)
    log.writer().append(make_record(6))
    report = log.verify()
    assert report.ok, report.problem
    assert any("followed the last signed checkpoint" in w for w in report.warnings), report.warnings


def test_a_process_that_exits_after_a_settling_append_leaves_it_anchored(signed_log):
    log = signed_log(1)
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from seepient.audit import AuditLog
        from seepient.audit.signing import CheckpointSigner
        from tests.audit.conftest import make_record

        log = AuditLog(Path(sys.argv[1]), signer=CheckpointSigner(Path(sys.argv[2])))
        log.append_settling(make_record(2))
        sys.exit(0)  # no close: the exit itself must wait for the settler
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(log.path), str(log.key)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    report = log.verify()
    assert report.ok and report.checkpoint_seq == 2 and not report.warnings, report.warnings


def test_an_unsigned_log_settles_too(tmp_path):
    path = tmp_path / "audit.log"
    writer = AuditLog(path)
    writer.append_settling(make_record(1))
    writer.append_settling(make_record(2))
    writer.close()
    assert _anchored_seq(path.with_name("audit.log.anchor")) == 2


def test_without_a_thread_to_settle_on_the_record_settles_at_once(signed_log, monkeypatch):
    log = signed_log(1)
    writer = log.writer()

    def no_thread(cls: type) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(log_module._Settler, "shared", classmethod(no_thread))
    assert writer.append_settling(make_record(2)).seq == 2
    assert _anchored_seq(log.anchor) == 2
    writer.close()
    assert log.verify().ok


def test_every_log_of_a_process_settles_and_signs_on_one_thread_each(tmp_path):
    # A server holds a log per session: a thread per log was a thread start on each session's first record.
    from seepient.audit.signing import CheckpointSigner

    logs = [
        AuditLog(tmp_path / f"s{index}" / "audit.log", signer=CheckpointSigner(tmp_path / f"s{index}.key"))
        for index in range(6)
    ]
    for log in logs:
        log.preload()
        log.append_settling(make_record(1))
        log.append(make_record(2))
        log.append_settling(make_record(3))
    for log in logs:
        log.close()
    names = [thread.name for thread in threading.enumerate()]
    assert names.count("seepient-audit-settler") == 1
    assert names.count("seepient-audit-signer") == 1
    for index in range(6):
        assert _anchored_seq(tmp_path / f"s{index}" / "audit.log.anchor") == 3


def test_logs_appending_at_once_from_many_threads_all_sign_their_heads(tmp_path):
    # Two logs' durable appends meet at the one signing thread: the second signs on its own thread instead of
    # waiting out the first one's fsync, and every head is signed.

    # One key, made by whichever thread's first append comes first (the others read it).
    signed = [
        SignedLog(tmp_path / f"s{index}" / "audit.log", tmp_path / "keys" / "k.key", None)
        for index in range(4)
    ]
    logs = [log.writer() for log in signed]
    failures: list[BaseException] = []

    def append_many(log: AuditLog) -> None:
        try:
            for index in range(1, 41):
                log.append(make_record(index))
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=append_many, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures
    for log, files in zip(logs, signed, strict=True):
        log.close()
        report = files.verify()
        assert report.ok and report.records == 40 and report.checkpoint_seq == 40, report


def test_a_record_the_settler_cannot_take_is_settled_at_once_and_lets_the_locks_go(signed_log, monkeypatch):
    log = signed_log(1)
    writer = log.writer()

    def broken(cls: type) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(log_module._Settler, "shared", classmethod(broken))
    with pytest.raises(OSError, match="Too many open files"):
        writer.append_settling(make_record(2))
    # The record was written and made durable here; the log is not left locked (the next append would hang).
    monkeypatch.undo()
    assert writer.append(make_record(3)).seq == 3
    writer.close()
    report = log.verify()
    assert report.ok and report.records == 3 and report.checkpoint_seq == 3, report
