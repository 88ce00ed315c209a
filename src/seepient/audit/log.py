"""The append-only, hash-chained audit log: one fsynced JSON line per entry plus an atomically replaced head anchor.

Line format: ``{"seq": n, "prev": <hash of entry n-1>, ...record fields..., "hash": <SHA-256 of the RFC 8785
canonical JSON of everything but hash>}``; entry 1 chains to ``GENESIS_HASH``. ``<log>.anchor`` holds the last
anchored ``seq``/``hash`` and the first entry's hash, so removing records from the end shows on verification.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from seepient.audit._chain import (
    GENESIS_HASH,
    TORN_TAIL_TYPE,
    Anchor,
    AnchorUnreadable,
    ChainedEntry,
    ChainWalker,
    LineHasher,
    WalkerState,
    anchor_path_for,
    encode_line,
    iter_lines,
    lock_path_for,
    read_anchor,
)
from seepient.audit.record import RESERVED_KEYS, AuditRecord

_TAIL_CHUNK = 64 * 1024


class AuditLogError(Exception):
    """The audit log cannot take a record; the message says what happened and what to do."""


class AuditLogCorrupted(AuditLogError):
    """The log and its anchor disagree, so appending would chain onto a history that may have been altered."""


@dataclass(frozen=True)
class AuditEntry:
    """Where an appended record landed in the chain."""

    seq: int
    prev: str
    hash: str


class AuditLog:
    """Appends records to the hash-chained log at ``path``; safe across threads and processes."""

    def __init__(self, path: Path, *, lock_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.anchor_path = anchor_path_for(self.path)
        self._lock = FileLock(lock_path_for(self.path), timeout=lock_timeout, mode=0o600)

    def append(self, record: AuditRecord | Mapping[str, Any]) -> AuditEntry:
        """Chain ``record`` onto the log and return its place once it is on disk (fsynced)."""
        fields = _record_fields(record)
        _ensure_private_dir(self.path.parent)
        try:
            with self._lock:
                return self._append_locked(fields)
        except Timeout:
            raise AuditLogError(
                f"could not lock {self._lock.lock_file} within {self._lock.timeout:g}s: another Seepient "
                "process is holding the audit log; try again, or find the stuck process"
            ) from None

    async def aappend(self, record: AuditRecord | Mapping[str, Any]) -> AuditEntry:
        """``append`` without blocking the event loop (the lock wait and fsync run in a thread)."""
        return await asyncio.to_thread(self.append, record)

    def _append_locked(self, fields: dict[str, Any]) -> AuditEntry:
        anchor = self._read_anchor()
        fd = self._open_for_anchor(anchor)
        try:
            if anchor is None:
                anchor = self._start_new_log(fd)
            head, first_hash, tail_end = self._find_head(fd, anchor)
            payload = tail_end.newline
            if tail_end.region is not None:
                seal, head = _seal(tail_end.region, head)
                payload += seal
                first_hash = first_hash or head.last_hash
            entry = {"seq": head.last_seq + 1, "prev": head.last_hash, **fields}
            line, digest = encode_line(entry)
            _write_all(fd, payload + line)
            os.fsync(fd)
        finally:
            os.close(fd)
        _replace_anchor(
            self.anchor_path, Anchor(first_hash=first_hash or digest, seq=entry["seq"], hash=digest)
        )
        return AuditEntry(seq=entry["seq"], prev=entry["prev"], hash=digest)

    def _read_anchor(self) -> Anchor | None:
        try:
            return read_anchor(self.anchor_path)
        except AnchorUnreadable as error:
            raise AuditLogCorrupted(f"{error}; {_WHAT_TO_DO}") from None

    def _open_for_anchor(self, anchor: Anchor | None) -> int:
        if anchor is not None and anchor.seq > 0 and not self.path.exists():
            raise AuditLogCorrupted(
                f"{self.path} is missing, but its head anchor says it held {anchor.seq} records; {_WHAT_TO_DO}"
            )
        return _open_log(self.path)

    def _start_new_log(self, fd: int) -> Anchor:
        size = os.fstat(fd).st_size
        if size:
            raise AuditLogCorrupted(
                f"{self.path} holds {size} bytes but its head anchor {self.anchor_path} is missing, so a cut "
                f"tail could not be detected; {_WHAT_TO_DO}"
            )
        # The anchor exists before the first record does: a log with records and no anchor can then only mean
        # the anchor was removed, never that a writer died between the two steps.
        anchor = Anchor(seq=0, hash=GENESIS_HASH)
        _replace_anchor(self.anchor_path, anchor)
        return anchor

    def _find_head(self, fd: int, anchor: Anchor) -> tuple[WalkerState, str | None, _TailEnd]:
        """The last chained entry at or after the anchor, its first hash, and what follows the chain.

        Reads only the file's tail: back to the anchored line (normally the last line), then forward.
        """
        size = os.fstat(fd).st_size
        if anchor.seq == 0:
            start, state = 0, WalkerState()
        else:
            start, state = _locate_anchored_line(fd, size, anchor, self.path)
        tail = os.pread(fd, size - start, start) if size > start else b""
        # This append ends an unterminated last line with a newline before anything else, so the tail is
        # judged as it will read afterwards: a line cut just before its newline is then a whole entry that
        # continues the chain (and is kept), not torn bytes to seal, which verification would see as a fork.
        newline = b"\n" if tail and not tail.endswith(b"\n") else b""
        walker = ChainWalker(state)
        first_hash = anchor.first_hash
        for line_no, raw in enumerate(iter_lines(tail + newline), start=1):
            entry = walker.feed(raw, line_no)
            if entry is not None and entry.seq == 1:
                first_hash = entry.hash
        region = None
        if walker.region is not None:
            region = _OpenRegion(walker.region.digest.copy(), walker.region.length)
        return walker.state, first_hash, _TailEnd(newline, region)


_WHAT_TO_DO = (
    "run `seepient audit verify` to see what changed, then move the log and its .anchor aside to start a new "
    "log (keep the old one as evidence)"
)


@dataclass(frozen=True)
class _OpenRegion:
    digest: Any
    length: int


@dataclass(frozen=True)
class _TailEnd:
    """What an append must write before its record: a newline ending a cut line, and bytes to seal."""

    newline: bytes
    region: _OpenRegion | None


def _seal(region: _OpenRegion, head: WalkerState) -> tuple[bytes, WalkerState]:
    """A chained ``torn_tail`` entry closing the unchained bytes after ``head``, and the head after it.

    A writer killed mid-``write`` leaves a line without its newline (or a few unchained lines if it died
    while sealing). Truncating them away would hide that something was being recorded, and appending after
    them would glue the next record onto garbage. Instead the bytes stay where they are, a newline ends
    them, and a chained entry commits to their exact length and SHA-256, so verification accepts them as
    sealed (with a warning) and any later change to them is still detected.
    """
    entry = {
        "seq": head.last_seq + 1,
        "prev": head.last_hash,
        "type": TORN_TAIL_TYPE,
        "timestamp": _now(),
        "torn_length": region.length,
        "torn_sha256": region.digest.hexdigest(),
        "detail": "bytes left by an interrupted write, kept in place and sealed",
    }
    line, entry_digest = encode_line(entry)
    return line, WalkerState(last_seq=entry["seq"], last_hash=entry_digest, last_prev=head.last_hash)


def _locate_anchored_line(fd: int, size: int, anchor: Anchor, path: Path) -> tuple[int, WalkerState]:
    """The offset just after the anchored entry's line, found by reading backwards from the end."""
    hasher = LineHasher()
    window = _TAIL_CHUNK
    while True:
        begin = max(0, size - window)
        pieces = os.pread(fd, size - begin, begin).split(b"\n")
        # pieces[-1] follows the last newline (empty, or torn bytes); pieces[0] may start mid-line unless the
        # window reaches the start of the file.
        line_end = size - len(pieces[-1])
        for body in reversed(pieces[(0 if begin == 0 else 1) : -1]):
            decoded = hasher.decode(body, 0)
            if isinstance(decoded, ChainedEntry):
                if decoded.seq == anchor.seq and decoded.hash == anchor.hash:
                    return line_end, WalkerState(decoded.seq, decoded.hash, decoded.prev)
                if decoded.seq < anchor.seq:
                    return _anchored_line_missing(path, anchor)
            line_end -= len(body) + 1
        if begin == 0:
            return _anchored_line_missing(path, anchor)
        window *= 2


def _anchored_line_missing(path: Path, anchor: Anchor) -> tuple[int, WalkerState]:
    raise AuditLogCorrupted(
        f"the head anchor says record {anchor.seq} ends the log, but {path} does not hold that record intact "
        f"(records were removed or edited); {_WHAT_TO_DO}"
    )


def _record_fields(record: AuditRecord | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(record, AuditRecord):
        return record.to_json()
    if not isinstance(record, Mapping):
        raise TypeError(f"an audit record is an AuditRecord or a mapping, not {type(record).__name__}")
    kind = record.get("type", "action")
    if kind == "action":
        return AuditRecord.model_validate(dict(record)).to_json()
    if kind == TORN_TAIL_TYPE:
        raise ValueError("type 'torn_tail' is reserved for entries the log writes itself")
    if not isinstance(kind, str):
        raise ValueError("a record's 'type' must be a string")
    clash = RESERVED_KEYS.intersection(record)
    if clash:
        raise ValueError(f"a record may not carry {sorted(clash)}: the log sets seq, prev and hash itself")
    fields = dict(record)
    try:
        encode_line({"seq": 1, "prev": GENESIS_HASH, **fields})
    except (ValueError, TypeError) as error:
        raise ValueError(f"the record is not canonical JSON (RFC 8785): {error}") from None
    return fields


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _ensure_private_dir(directory: Path) -> None:
    if directory.is_dir():
        return
    directory.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
        # mkdir's mode is filtered by the umask; the audit directory must not be readable by others.
        os.chmod(directory, 0o700)


def _open_log(path: Path) -> int:
    # O_NOFOLLOW: a symlink planted at the log path must not redirect records into another file.
    flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            return os.open(path, flags)
        except OSError as error:
            raise AuditLogError(f"cannot open the audit log {path}: {error.strerror}") from None
    except OSError as error:
        raise AuditLogError(f"cannot create the audit log {path}: {error.strerror}") from None
    os.fchmod(fd, 0o600)
    _fsync_dir(path.parent)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    # One write normally carries the whole payload; a short write (a signal, a full disk) continues where it
    # stopped, and O_APPEND under the lock keeps the pieces adjacent.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _replace_anchor(path: Path, anchor: Anchor) -> None:
    # Callers hold the log's lock, so any temp anchor already there belongs to a writer that died mid-replace.
    prefix = f".{path.name}."
    with os.scandir(path.parent) as entries:
        stale = [e.path for e in entries if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    for leftover in stale:
        Path(leftover).unlink(missing_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        _write_all(fd, anchor.model_dump_json().encode("utf-8") + b"\n")
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(temp, path)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
