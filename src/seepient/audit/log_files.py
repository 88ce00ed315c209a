"""The audit log's files on disk, below the writer: finding the chained head and sealing torn bytes after it,
opening the log privately, writing all of a buffer, replacing the anchor slot, and syncing the directory."""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seepient.audit._chain import (
    TORN_TAIL_TYPE,
    UNSIGNED_TAIL_TYPE,
    ChainedEntry,
    ChainWalker,
    WalkerState,
    decode_line,
    encode_line,
    iter_lines,
)
from seepient.audit.anchor import ANCHOR_SLOT_SIZE, Anchor
from seepient.protocol.errors import AuditError

_TAIL_CHUNK = 64 * 1024


WHAT_TO_DO = (
    "run `seepient audit verify` to see what changed, then move the log and its .anchor aside to start a new "
    "log (keep the old one as evidence)"
)


class AuditLogError(AuditError):
    """The audit log cannot take a record; the message says what happened and what to do."""


class AuditLogCorrupted(AuditLogError):
    """The log and its anchor disagree, so appending would chain onto a history that may have been altered."""


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class _OpenRegion:
    digest: Any
    length: int


@dataclass(frozen=True)
class _TailEnd:
    """What an append must write before its record: a newline ending a cut line, and bytes to seal."""

    newline: bytes
    region: _OpenRegion | None


def line_ending_at(fd: int, offset: int) -> bytes | None:
    """The whole line (newline included) that ends just before ``offset``, read backwards in growing windows;
    None when the byte before ``offset`` ends no line."""
    if offset <= 0:
        return None
    window = 4096
    while True:
        begin = max(0, offset - window)
        data = os.pread(fd, offset - begin, begin)
        if not data.endswith(b"\n"):
            return None
        cut = data.rfind(b"\n", 0, len(data) - 1)
        if cut >= 0 or begin == 0:
            return data[cut + 1 :]
        window *= 4


def find_head(
    fd: int, anchor: Anchor, path: Path, want_seq: int | None = None
) -> tuple[WalkerState, str | None, _TailEnd, int, str | None]:
    """The last chained entry at or after the anchor, its first hash, what follows the chain, the log's size,
    and the hash of entry ``want_seq`` if it is among the entries read.

    Reads only the file's tail: back to the anchored line (normally the last line), then forward.
    """
    size = os.fstat(fd).st_size
    if anchor.seq == 0:
        start, state = 0, WalkerState()
    else:
        start, state = _locate_anchored_line(fd, size, anchor, path)
    tail = os.pread(fd, size - start, start) if size > start else b""
    # This append ends an unterminated last line with a newline before anything else, so the tail is
    # judged as it will read afterwards: a line cut just before its newline is then a whole entry that
    # continues the chain (and is kept), not torn bytes to seal, which verification would see as a fork.
    newline = b"\n" if tail and not tail.endswith(b"\n") else b""
    walker = ChainWalker(state)
    first_hash = anchor.first_hash
    wanted = None
    for line_no, raw in enumerate(iter_lines(tail + newline), start=1):
        entry = walker.feed(raw, line_no)
        if entry is not None:
            if entry.seq == 1:
                first_hash = entry.hash
            if entry.seq == want_seq:
                wanted = entry.hash
    region = None
    if walker.region is not None:
        region = _OpenRegion(walker.region.digest.copy(), walker.region.length)
    return walker.state, first_hash, _TailEnd(newline, region), size, wanted


def seal_region(region: _OpenRegion, head: WalkerState) -> tuple[bytes, WalkerState]:
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


def unsigned_tail_note(anchored_seq: int, head: WalkerState) -> tuple[bytes, WalkerState]:
    """A chained entry saying which records this signing writer found after the last signed checkpoint.

    A writer that died between fsyncing a record and signing the checkpoint leaves such records, and so
    does anyone without the key who appends lines that chain. The next signature will cover them either
    way, so the log says, for good, that they were found unsigned (verification lists them).
    """
    first, last = anchored_seq + 1, head.last_seq
    entry = {
        "seq": head.last_seq + 1,
        "prev": head.last_hash,
        "type": UNSIGNED_TAIL_TYPE,
        "timestamp": _now(),
        "first_seq": first,
        "last_seq": last,
        "detail": "records found after the last signed checkpoint when this writer opened the log",
    }
    line, entry_digest = encode_line(entry)
    return line, WalkerState(last_seq=entry["seq"], last_hash=entry_digest, last_prev=head.last_hash)


def _locate_anchored_line(fd: int, size: int, anchor: Anchor, path: Path) -> tuple[int, WalkerState]:
    """The offset just after the anchored entry's line, found by reading backwards from the end."""
    window = _TAIL_CHUNK
    while True:
        begin = max(0, size - window)
        pieces = os.pread(fd, size - begin, begin).split(b"\n")
        # pieces[-1] follows the last newline (empty, or torn bytes); pieces[0] may start mid-line unless the
        # window reaches the start of the file.
        line_end = size - len(pieces[-1])
        for body in reversed(pieces[(0 if begin == 0 else 1) : -1]):
            decoded = decode_line(body, 0)
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
        f"(records were removed or edited); {WHAT_TO_DO}"
    )


def ensure_private_dir(directory: Path) -> None:
    if directory.is_dir():
        return
    directory.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
        # mkdir's mode is filtered by the umask; the audit directory must not be readable by others.
        os.chmod(directory, 0o700)


def open_log(path: Path) -> int:
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


def write_all(fd: int, data: bytes) -> None:
    # One write normally carries the whole payload; a short write (a signal, a full disk) continues where it
    # stopped, and O_APPEND under the lock keeps the pieces adjacent.
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_anchor_slot(fd: int, slot: int, data: bytes) -> None:
    # In place, no fsync: the module docstring says why a lagging slot is safe. One pwrite of one aligned
    # sector cannot be split by the process dying, and the slot it overwrites is never the newest.
    written = os.pwrite(fd, data, slot * ANCHOR_SLOT_SIZE)
    if written != len(data):
        raise AuditLogError(
            f"the head anchor took only {written} of {len(data)} bytes; the record itself is on disk, and the "
            "next append rewrites the anchor"
        )


def replace_anchor(path: Path, data: bytes) -> None:
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
        write_all(fd, data)
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
