"""Verification of the audit log: re-walks the hash chain and checks it against the head anchor.

It streams the file once, so a log of 100k records verifies in seconds and in constant memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from seepient.audit._chain import (
    Anchor,
    AnchorFile,
    AnchorUnreadable,
    ChainProblem,
    ChainWalker,
    anchor_path_for,
    lock_path_for,
    read_anchor,
)
from seepient.audit._lock import LockTimeout, ProcessLock

_MAX_LISTED_WARNINGS = 20
_LOCK_WAIT_SECONDS = 10.0


class VerifyReport(BaseModel):
    """The verdict on one log. ``records`` counts the entries that verified (the intact prefix when not ok)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    ok: bool
    exists: bool
    records: int
    first_bad_seq: int | None = None
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    head_seq: int = 0
    head_hash: str | None = None


def verify_log(path: Path) -> VerifyReport:
    """Check every entry's hash and link, the sealed torn tails, and the head anchor; name the first bad seq."""
    path = Path(path)
    # Writers only ever add bytes after the anchored record, so a pass without the lock that finds the log
    # intact is true of what it read, and verifying never stalls the runtime's appends. Only a failing pass
    # might have caught an append half-way (or an anchor slot mid-update), so it is repeated holding the
    # writers' lock before it counts.
    report, settled = _verify_once(path)
    if settled:
        return report
    with _reader_lock(path) as lock_warning:
        report, _ = _verify_once(path)
    if lock_warning:
        report = report.model_copy(update={"warnings": (lock_warning, *report.warnings)})
    return report


def _verify_once(path: Path) -> tuple[VerifyReport, bool]:
    """The report, and whether it is settled (nothing in it could be an append caught half-way)."""
    anchor_path = anchor_path_for(path)
    try:
        # The anchor is read before the log: whatever a concurrent writer adds afterwards lies beyond it.
        anchor_file = read_anchor(anchor_path)
    except AnchorUnreadable as error:
        return _failed(path, records=0, seq=None, problem=f"the head anchor is damaged: {error}"), False
    if not path.exists():
        if anchor_file is not None and anchor_file.anchor.seq > 0:
            return _failed(
                path,
                records=0,
                seq=1,
                problem=f"the log file is missing, but its head anchor says it held {anchor_file.anchor.seq} "
                "records (the log was deleted)",
            ), False
        return VerifyReport(path=str(path), ok=True, exists=False, records=0), True
    try:
        report = _verify_existing(path, anchor_file, anchor_path)
    except OSError as error:
        report = _failed(path, records=0, seq=None, problem=f"the log cannot be read: {error.strerror}")
    return report, report.ok and (anchor_file is None or anchor_file.damaged_slot is None)


def _verify_existing(path: Path, anchor_file: AnchorFile | None, anchor_path: Path) -> VerifyReport:
    anchor = anchor_file.anchor if anchor_file is not None else None
    walker = ChainWalker()
    problem: ChainProblem | None = None
    size = 0
    with path.open("rb") as stream:
        for line_no, raw in enumerate(stream, start=1):
            size += len(raw)
            entry = walker.feed(raw, line_no)
            if entry is None or anchor is None:
                continue
            if entry.seq == 1 and anchor.first_hash is not None and entry.hash != anchor.first_hash:
                problem = ChainProblem(
                    1,
                    "the first record is not the one this log began with (the anchor names another first "
                    "hash): the log was replaced or rewritten from its head",
                )
                break
            if entry.seq == anchor.seq and entry.hash != anchor.hash:
                problem = ChainProblem(
                    entry.seq,
                    f"record {entry.seq} (line {line_no}) is not the record the head anchor names: it was "
                    "replaced (edited and its hash recomputed), or the anchor was rewritten",
                )
                break
    head = walker.state
    if problem is None:
        problem = _tail_problem(walker, anchor, anchor_path, size)
    if problem is not None:
        intact = min(head.last_seq, problem.seq - 1)
        return _failed(path, records=intact, seq=problem.seq, problem=problem.sentence)
    return VerifyReport(
        path=str(path),
        ok=True,
        exists=True,
        records=head.last_seq,
        warnings=_warnings(walker, anchor_file),
        head_seq=head.last_seq,
        head_hash=head.last_hash if head.last_seq else None,
    )


def _tail_problem(
    walker: ChainWalker, anchor: Anchor | None, anchor_path: Path, size: int
) -> ChainProblem | None:
    last = walker.state.last_seq
    region = walker.region
    lone_torn_line = region is not None and region.lines == 1 and not region.ends_with_newline
    if region is not None and not lone_torn_line:
        return region.problem
    if anchor is None:
        if size == 0:
            return None
        return ChainProblem(
            last + 1,
            f"the head anchor {anchor_path.name} is missing: the {last} records present chain correctly, but "
            f"records after seq {last} could have been removed without trace",
        )
    if last < anchor.seq:
        removed = (
            f"record {anchor.seq} was" if last + 1 == anchor.seq else f"records {last + 1}–{anchor.seq} were"
        )
        cut = " and the last line is a partial record" if region is not None else ""
        return ChainProblem(
            last + 1,
            f"the log ends after record {last} but its head anchor says it held {anchor.seq} records: "
            f"{removed} removed (the file was truncated){cut}",
        )
    if region is not None:
        return ChainProblem(
            last + 1,
            f"the log ends with an incomplete line of {region.length} bytes after record {last}: a write was cut "
            f"off (the writer was killed mid-append) or the tail was damaged. Records 1–{last} are intact; the "
            "next append seals the partial line as a torn_tail record (or keeps it whole if only its newline is "
            "missing)",
        )
    return None


def _warnings(walker: ChainWalker, anchor_file: AnchorFile | None) -> tuple[str, ...]:
    anchor = anchor_file.anchor if anchor_file is not None else None
    notes: list[str] = []
    if anchor_file is not None and anchor_file.damaged_slot is not None:
        notes.append(
            f"one slot of the head anchor was not used ({anchor_file.damaged_slot}); the other, at seq "
            f"{anchor_file.anchor.seq}, was. A crash during an anchor update leaves this (the next append "
            "rewrites that slot); otherwise the anchor was edited"
        )
    for entry, first_line, length in walker.sealed:
        notes.append(
            f"seq {entry.seq} seals {length} bytes left by an interrupted write (from line {first_line}); "
            "they are kept in place and unchanged since"
        )
    notes.extend(
        f"line {line_no} is formatted differently from how Seepient writes it; its content still matches its hash"
        for line_no in walker.reformatted
    )
    if anchor is not None and walker.state.last_seq > anchor.seq:
        first, last = anchor.seq + 1, walker.state.last_seq
        which = f"record {first} comes" if first == last else f"records {first}–{last} come"
        notes.append(
            f"{which} after the head anchor (a writer stopped between writing a record and updating the "
            "anchor); the next append re-anchors it"
        )
    if len(notes) > _MAX_LISTED_WARNINGS:
        hidden = len(notes) - _MAX_LISTED_WARNINGS
        notes = [*notes[:_MAX_LISTED_WARNINGS], f"… and {hidden} more warnings like these"]
    return tuple(notes)


def _failed(path: Path, *, records: int, seq: int | None, problem: str) -> VerifyReport:
    return VerifyReport(
        path=str(path), ok=False, exists=path.exists(), records=records, first_bad_seq=seq, problem=problem
    )


@contextlib.contextmanager
def _reader_lock(path: Path) -> Iterator[str | None]:
    # Holding the writers' lock means an append in flight cannot show up as a torn last line. Verification
    # must still work where the lock cannot be taken (a read-only copy, a stuck writer), so it says so instead.
    if not path.parent.is_dir():
        yield None
        return
    lock = ProcessLock(lock_path_for(path))
    try:
        lock.acquire(_LOCK_WAIT_SECONDS)
    except LockTimeout:
        lock.close()
        yield f"another process held the log's lock for {_LOCK_WAIT_SECONDS:g}s; verified without it"
        return
    except OSError as error:
        lock.close()
        yield f"could not take the log's lock ({error.strerror or error}); verified without it"
        return
    try:
        yield None
    finally:
        lock.close()


def format_report(report: VerifyReport) -> str:
    """A few lines for a terminal: the verdict first, then warnings."""
    if not report.exists and report.ok:
        return f"no audit log at {report.path} yet: nothing has been recorded (0 records)"
    if report.ok:
        head = f"; head seq {report.head_seq}, hash {report.head_hash}" if report.head_hash else ""
        lines = [f"audit log {report.path} is intact: {report.records} records verified{head}"]
    else:
        where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        lines = [
            f"audit log {report.path} FAILED verification{where}: {report.problem}",
            f"{report.records} records before that point verify",
        ]
    lines.extend(f"warning: {note}" for note in report.warnings)
    return "\n".join(lines)
