"""Real processes against one log: concurrent writers, and writers SIGKILLed at every step of an append."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest

from seepient.audit import AuditLog, verify_log

# fork keeps the children cheap (no re-import) and lets them inherit the test's helpers.
_FORK = multiprocessing.get_context("fork")


def _append_many(path: Path, worker: int, count: int, barrier, make_record) -> None:
    log = AuditLog(path)
    barrier.wait()
    for index in range(count):
        log.append(make_record(index, session=f"worker_{worker}"))


def test_concurrent_appends_from_several_processes_form_one_clean_chain(log_path, record_factory):
    workers, per_worker = 4, 75
    barrier = _FORK.Barrier(workers)
    processes = [
        _FORK.Process(target=_append_many, args=(log_path, worker, per_worker, barrier, record_factory))
        for worker in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0

    report = verify_log(log_path)
    assert report.ok, report.problem
    assert report.records == workers * per_worker
    entries = [json.loads(line) for line in log_path.read_bytes().splitlines()]
    assert [entry["seq"] for entry in entries] == list(range(1, workers * per_worker + 1))
    for worker in range(workers):
        mine = [entry["action"]["call_id"] for entry in entries if entry["session_id"] == f"worker_{worker}"]
        assert mine == [f"call_{index}" for index in range(per_worker)]


def _is_anchor(data: bytes) -> bool:
    return data.startswith(b'{"format"')


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _append_and_die_at(path: Path, stage: str, make_record, index: int) -> None:
    """Runs in a forked child: patch the chosen step of an append to SIGKILL this process there."""
    import seepient.audit.log as log_module

    real_write = log_module.write_all
    real_write_slot = log_module.write_anchor_slot

    def _write(fd: int, data: bytes) -> None:
        if _is_anchor(data):
            return real_write(fd, data)
        cut = {
            "mid-write": len(data) // 2,
            "early-write": 40,
            "all-but-newline": len(data) - 1,
            "seal-without-newline": data.find(b"\n", 1),
        }.get(stage)
        if cut is not None:
            os.write(fd, data[:cut])
            _die()
        real_write(fd, data)
        if stage == "after-write":
            _die()

    def _write_slot(fd: int, slot: int, data: bytes) -> None:
        if stage == "before-anchor":
            _die()
        if stage == "torn-anchor-slot":
            # A SIGKILL cannot split one small pwrite, but a power loss can leave a sector half old, half
            # new: write half the slot, as the disk would have, then stop.
            os.pwrite(fd, data[: len(data) // 2], slot * len(data))
            _die()
        real_write_slot(fd, slot, data)

    def _replace(src, dst) -> None:
        if stage == "anchor-create-rename" and str(dst).endswith(".anchor"):
            _die()
        os.rename(src, dst)

    log_module.write_all = _write
    log_module.write_anchor_slot = _write_slot
    log_module.os.replace = _replace
    AuditLog(path).append(make_record(index))
    os._exit(3)  # the stage was never reached: the test fails on the exit code


def _kill_during_append(path: Path, stage: str, make_record, index: int) -> None:
    child = _FORK.Process(target=_append_and_die_at, args=(path, stage, make_record, index))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == -signal.SIGKILL


@pytest.mark.parametrize(
    ("stage", "verifies", "records_after_kill"),
    [
        ("mid-write", False, 3),
        ("all-but-newline", False, 3),
        ("after-write", True, 4),
        ("before-anchor", True, 4),
        ("torn-anchor-slot", True, 4),
    ],
)
def test_a_writer_killed_at_any_step_leaves_a_log_that_verifies_or_says_why_and_accepts_appends(
    filled_log, record_factory, stage, verifies, records_after_kill
):
    log = filled_log(3)
    _kill_during_append(log.path, stage, record_factory, 4)

    report = verify_log(log.path)
    assert report.ok is verifies, report.problem
    assert report.records == records_after_kill
    if not verifies:
        assert report.first_bad_seq == 4 and "incomplete line" in (report.problem or "")
    else:
        assert any("after the head anchor" in note for note in report.warnings)
    damaged = [note for note in report.warnings if "slot of the head anchor" in note]
    assert len(damaged) == (1 if stage == "torn-anchor-slot" else 0), report.warnings
    if stage == "torn-anchor-slot":
        assert log.anchor_slots().count(None) == 1 and log.anchor_json()["seq"] == 3

    entry = AuditLog(log.path).append(record_factory(5))
    assert entry.seq == 5
    report = verify_log(log.path)
    assert report.ok and report.records == 5, report.problem
    assert None not in log.anchor_slots() and log.anchor_json()["seq"] == 5
    assert not [p for p in log.path.parent.iterdir() if p.name.endswith(".tmp")]
    sealed = [note for note in report.warnings if "seals" in note]
    if stage == "mid-write":
        assert len(sealed) == 1 and "seq 4 seals" in sealed[0]
    else:
        # A line cut just before its newline is a whole record: the next append ends it and keeps it.
        assert sealed == []


def test_the_first_append_killed_while_creating_the_anchor_leaves_a_fresh_start(log_path, record_factory):
    _kill_during_append(log_path, "anchor-create-rename", record_factory, 1)
    assert log_path.read_bytes() == b"" and not log_path.with_name("audit.log.anchor").exists()
    assert [p.name for p in log_path.parent.iterdir() if p.name.endswith(".tmp")]  # the temp anchor it left
    assert verify_log(log_path).ok

    assert AuditLog(log_path).append(record_factory(1)).seq == 1
    report = verify_log(log_path)
    assert report.ok and report.records == 1
    assert not [p for p in log_path.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("second_stage", "first_bad", "intact", "final_seq"),
    [
        ("early-write", 3, 2, 4),  # cut inside the seal: one region of two lines gets sealed as seq 3
        ("mid-write", 4, 3, 5),  # the seal landed, its record did not: seq 3 seals, then 4 seals the rest
        ("seal-without-newline", 3, 2, 4),  # the seal lacks only its newline: it is kept and still seals
    ],
)
def test_a_writer_killed_while_sealing_a_torn_tail_is_recovered_by_the_next(
    filled_log, record_factory, second_stage, first_bad, intact, final_seq
):
    log = filled_log(2)
    _kill_during_append(log.path, "mid-write", record_factory, 3)
    _kill_during_append(log.path, second_stage, record_factory, 4)

    report = verify_log(log.path)
    assert not report.ok and report.first_bad_seq == first_bad and report.records == intact, report.problem

    assert AuditLog(log.path).append(record_factory(5)).seq == final_seq
    report = verify_log(log.path)
    assert report.ok and report.records == final_seq
    assert any("seq 3 seals" in note for note in report.warnings)


def test_the_very_first_append_killed_mid_write_is_recovered(log_path, record_factory):
    _kill_during_append(log_path, "mid-write", record_factory, 1)
    report = verify_log(log_path)
    assert not report.ok and report.first_bad_seq == 1 and "incomplete line" in (report.problem or "")

    assert AuditLog(log_path).append(record_factory(2)).seq == 2
    report = verify_log(log_path)
    assert report.ok and report.records == 2


def _append_forever(path: Path, make_record) -> None:
    log = AuditLog(path)
    index = 0
    while True:
        index += 1
        log.append(make_record(index, content_size=400_000))


def test_writers_sigkilled_at_random_moments_never_leave_an_unrecoverable_log(log_path, record_factory):
    chooser = random.Random(20250101)
    for _ in range(5):
        child = _FORK.Process(target=_append_forever, args=(log_path, record_factory))
        child.start()
        deadline = time.monotonic() + 30
        start_size = log_path.stat().st_size if log_path.exists() else 0
        while (
            log_path.stat().st_size if log_path.exists() else 0
        ) <= start_size and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(chooser.uniform(0, 0.03))
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=30)

        report = verify_log(log_path)
        if not report.ok:
            assert "incomplete line" in (report.problem or ""), report.problem
            assert report.first_bad_seq == report.records + 1
        entry = AuditLog(log_path).append(record_factory(0))
        report = verify_log(log_path)
        assert report.ok, report.problem
        assert report.records == entry.seq


def test_verifying_while_processes_append_never_reports_a_false_failure(log_path, record_factory):
    AuditLog(log_path).append(record_factory(0))
    writers = [_FORK.Process(target=_append_forever, args=(log_path, record_factory)) for _ in range(2)]
    for writer in writers:
        writer.start()
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        while len(seen) < 4 and time.monotonic() < deadline:
            report = verify_log(log_path)
            assert report.ok, report.problem
            seen.add(report.records)
    finally:
        for writer in writers:
            os.kill(writer.pid, signal.SIGKILL)
            writer.join(timeout=30)
    assert len(seen) >= 4  # the log really grew while it was being verified
