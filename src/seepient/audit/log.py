"""The append-only, hash-chained audit log: one fsynced JSON line per entry plus a two-slot head anchor.

Line format: ``{"seq": n, "prev": <hash of entry n-1>, ...record fields..., "hash": <SHA-256 of the RFC 8785
canonical JSON of everything but hash>}``; entry 1 chains to ``GENESIS_HASH``. ``<log>.anchor`` names the last
anchored ``seq``/``hash`` and the first entry's hash, so removing records from the end shows on verification.

What a crash or power loss can leave behind:

- Every record whose ``append`` returned is on disk: its line goes out in one ``write`` and is fsynced
  before ``append`` returns (the runtime reports an action's outcome only after that).
- The record being appended may be absent, whole, or a partial last line. The next append ends a whole
  line with its newline, or keeps partial bytes where they are and seals them with a ``torn_tail`` entry.
- The anchor is two checksummed 512-byte slots (see ``_chain``); each append overwrites the slot that does
  not hold the newest anchor, in place, without an fsync of its own, and only after its record is durable.
  So the anchor on disk can lag behind the log (by the records appended since the kernel last wrote its
  page back, typically half a minute's worth at most), which verification reports as records after the
  anchor and the next append re-anchors; it can never name a record the log does not hold. While it
  lags, those last records are chained but not yet protected against a cut tail.
- A slot cut off mid-write is old or new on disks that write a 512-byte sector atomically (the assumption
  PostgreSQL makes for its control file); where a sector can come back garbled, the slot's check shows it
  and readers take the other slot. Only if both slots were garbled by one power loss would the anchor read
  as damaged, and then verification says so rather than trusting it.
- The anchor file itself is created (or converted from the older single-document format) by temp file,
  fsync, rename and directory fsync, before the first record it anchors: a log holding records never lacks
  its anchor because of a crash, so a missing anchor always means it was removed.

With a signing key every anchor slot is a signed checkpoint of the head (``signing.py``), and with a witness
the same slot is written there too (``witness.py``), both after the record is durable. ``close_interrupted``
closes, under the lock, the intents a dead process left without an outcome (``recovery.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from seepient.audit._chain import (
    ANCHOR_FILE_SIZE,
    ANCHOR_SLOT_SIZE,
    GENESIS_ANCHOR,
    TORN_TAIL_TYPE,
    UNSIGNED_TAIL_TYPE,
    Anchor,
    AnchorFile,
    AnchorUnreadable,
    ChainedEntry,
    ChainWalker,
    EncodedFields,
    WalkerState,
    anchor_file_bytes,
    anchor_path_for,
    anchor_slot,
    decode_line,
    encode_entry,
    encode_fields,
    encode_line,
    iter_lines,
    lock_path_for,
    open_anchor,
    read_anchor_fd,
)
from seepient.audit._lock import LockTimeout, ProcessLock
from seepient.audit.record import RECORD_TYPES, RESERVED_KEYS, SessionRecord
from seepient.audit.signing import AuditKeyError, head_predates_key
from seepient.audit.witness import WitnessError, WitnessFile

if TYPE_CHECKING:
    from seepient.audit.recovery import OpenIntent
    from seepient.audit.signing import CheckpointSigner

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


class _Head(NamedTuple):
    """The chain's head, and the bytes this object left at the end of both files (what makes it trustworthy)."""

    seq: int
    hash: str
    first_hash: str | None
    #: the anchor slot the next append overwrites (the one not holding the newest anchor)
    next_slot: int
    #: both anchor slots as the file holds them
    anchor_bytes: bytes
    #: the log's size, and the line that ends it (empty when this object has not written one yet)
    log_end: int
    last_line: bytes


class AuditLog:
    """Appends records to the hash-chained log at ``path``; safe across threads and processes.

    The object keeps the log, its anchor and its lock file open between appends (``close`` releases them;
    so does garbage collection). It may be shared by threads and survives ``fork``.

    With a ``signer`` every anchor update is a signed checkpoint of the head (``signing.py``); with a
    ``witness_path`` each checkpoint is also written there (``witness.py``). A signing writer refuses to
    chain onto a head signed by another key, or onto an unsigned head written after its key existed (the
    signature was stripped), and an unsigned writer refuses a signed log: it could not keep it signed.
    """

    def __init__(
        self,
        path: Path,
        *,
        lock_timeout: float = 30.0,
        principal: str | None = None,
        signer: CheckpointSigner | None = None,
        witness_path: Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.principal = principal
        self.signer = signer
        self.anchor_path = anchor_path_for(self.path)
        self._log_name = os.fspath(self.path)
        self._anchor_name = os.fspath(self.anchor_path)
        self._lock_timeout = lock_timeout
        self._files = _OpenFiles(ProcessLock(lock_path_for(self.path), make_parent=_ensure_private_dir))
        self._witness = WitnessFile(witness_path) if witness_path is not None else None
        self._head: _Head | None = None
        # flock excludes other openings of the lock file, not threads sharing this object's descriptor.
        self._threads = threading.Lock()
        weakref.finalize(self, self._files.close)
        if self._witness is not None:
            weakref.finalize(self, self._witness.close)
        _LIVE_LOGS.add(self)

    @property
    def witness_path(self) -> Path | None:
        return self._witness.path if self._witness is not None else None

    @property
    def witness_problem(self) -> str | None:
        """Why the last checkpoint did not reach the witness (it lags until one does), None when it did."""
        return self._witness.problem if self._witness is not None else None

    def append(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        """Chain ``record`` onto the log and return its place once it is on disk (fsynced).

        A log opened with a ``principal`` stamps it on every record that does not name one.
        """
        fields = self._fields(record)
        with self._locked():
            return self._append_locked(fields)

    async def aappend(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        """``append`` without blocking the event loop (the lock wait and fsync run in a thread)."""
        return await asyncio.to_thread(self.append, record)

    def close_interrupted(
        self, outcome_for: Callable[[OpenIntent], SessionRecord | None]
    ) -> list[tuple[OpenIntent, SessionRecord]]:
        """Find the intents whose writer is gone without an outcome and append the outcome ``outcome_for``
        makes for each (None leaves one open), all under the log's lock, so two sessions starting at once
        never close one action twice. Returns what was closed, oldest first.

        Reads only what was appended since the last call (``recovery.py`` keeps its place beside the log).
        """
        from seepient.audit.recovery import scan_open_intents, writer_gone

        closed: list[tuple[OpenIntent, SessionRecord]] = []
        with self._locked():
            scan = scan_open_intents(self.path)
            if scan.torn:
                # A writer killed mid-append left part of a line: seal it now, so the log verifies again
                # without waiting for this session's first record.
                self._seal_locked()
            still_open = []
            for intent in scan.open:
                outcome = outcome_for(intent) if writer_gone(intent.record.writer) else None
                if outcome is None:
                    still_open.append(intent)
                    continue
                self._append_locked(self._fields(outcome))
                closed.append((intent, outcome))
            scan.remember(self.path, still_open)
        return closed

    def close(self) -> None:
        """Release the open files; a later ``append`` opens them again."""
        with self._threads:
            self._head = None
            self._files.close()
            if self._witness is not None:
                self._witness.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _fields(self, record: SessionRecord | Mapping[str, Any]) -> EncodedFields:
        if self.principal is not None:
            record = _with_principal(record, self.principal)
        return _encode_record(record)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This object's threads, then other processes, excluded for as long as the block runs."""
        threads, timeout = self._threads, self._lock_timeout
        if not threads.acquire(blocking=False):
            started = time.monotonic()
            if not threads.acquire(timeout=timeout):
                raise self._lock_timeout_error()
            timeout = max(0.0, timeout - (time.monotonic() - started))
        try:
            lock = self._files.lock
            try:
                lock.acquire(timeout)
            except LockTimeout:
                raise self._lock_timeout_error() from None
            except OSError as error:
                raise AuditLogError(
                    f"cannot open the audit log's lock file {lock.path}: {error.strerror or error}"
                ) from None
            try:
                yield
            finally:
                lock.release()
        finally:
            threads.release()

    def _lock_timeout_error(self) -> AuditLogError:
        return AuditLogError(
            f"could not lock {self._files.lock.path} within {self._lock_timeout:g}s: another Seepient "
            "process is holding the audit log; try again, or find the stuck process"
        )

    def _append_locked(self, fields: EncodedFields) -> AuditEntry:
        # Forget the head first: if anything below fails, the next append re-reads the files.
        head, self._head = self._head, None
        prefix = b""
        if head is None or not self._files_as_left(head):
            head, prefix = self._load_head()
        seq = head.seq + 1
        line, digest = encode_entry(seq, head.hash, fields)
        payload = prefix + line if prefix else line
        first_hash = head.first_hash or digest
        entry = AuditEntry(seq=seq, prev=head.hash, hash=digest)
        files = self._files
        log_fd = files.log

        def write_durably() -> None:
            _write_all(log_fd, payload)
            os.fsync(log_fd)

        # Everything else is computed before the write: the process sleeps in fsync, and work done after
        # it runs on cold caches, which costs several times as much as the same work done here. The
        # checkpoint's signature is made during the fsync, by the signer's thread.
        slot = self._durably_then_checkpoint(write_durably, seq, digest, first_hash)
        if head.next_slot:
            anchor_bytes = head.anchor_bytes[:ANCHOR_SLOT_SIZE] + slot
        else:
            anchor_bytes = slot + head.anchor_bytes[ANCHOR_SLOT_SIZE:]
        after = _Head(
            seq, digest, first_hash, 1 - head.next_slot, anchor_bytes, head.log_end + len(payload), line
        )
        _write_anchor_slot(files.anchor, head.next_slot, slot)
        if self._witness is not None:
            self._witness.record(slot)
        self._head = after
        return entry

    def _seal_locked(self) -> None:
        """Write only what must precede the next record (the seal of torn bytes), and checkpoint it."""
        self._head = None
        head, prefix = self._load_head()
        if not prefix.strip(b"\n"):
            if prefix:  # only a missing newline: the cut line was a whole entry, which ends the chain now
                _write_all(self._files.log, prefix)
                os.fsync(self._files.log)
            return
        log_fd = self._files.log

        def write_durably() -> None:
            _write_all(log_fd, prefix)
            os.fsync(log_fd)

        assert head.first_hash is not None
        slot = self._durably_then_checkpoint(write_durably, head.seq, head.hash, head.first_hash)
        _write_anchor_slot(self._files.anchor, head.next_slot, slot)
        if self._witness is not None:
            self._witness.record(slot)

    def _durably_then_checkpoint(
        self, write_durably: Callable[[], None], seq: int, digest: str, first_hash: str
    ) -> bytes:
        """Run the record's durable write, and return the anchor slot that checkpoints it (signed if we sign)."""
        signer = self.signer
        if signer is None:
            write_durably()
            return anchor_slot(seq, digest, first_hash)
        try:
            # The key is loaded (or made) before anything is written: a missing key never follows a record.
            key_id = signer.key_id
        except AuditKeyError as error:
            raise AuditLogError(f"cannot sign the audit log's head: {error}") from None
        signature = signer.sign_during(write_durably, first_hash, seq, digest)
        return anchor_slot(seq, digest, first_hash, key_id, signature)

    def _files_as_left(self, head: _Head) -> bool:
        # The remembered head is trusted only if, under the lock, both paths still name the files this
        # object wrote, the log has the size it left, and the bytes it last wrote (its record line and both
        # anchor slots) are still there: another writer's append changes the size, and any replacement,
        # truncation or edit of the tail or the anchor changes an identity, a size or those bytes. The
        # bytes are compared rather than timestamps, which move on a coarse clock tick and could miss an
        # edit made just after an append. Anything else falls back to reading the anchor and the log's
        # tail, exactly as a fresh object does (edits further back were never the writer's to catch).
        files, line = self._files, head.last_line
        if files.log is None or files.anchor is None or not line:
            return False
        try:
            log = os.lstat(self._log_name)
            anchor = os.lstat(self._anchor_name)
            return (
                (log.st_ino, log.st_dev, log.st_size) == (*files.log_id, head.log_end)
                and (anchor.st_ino, anchor.st_dev, anchor.st_size) == files.anchor_id
                and os.pread(files.log, len(line), head.log_end - len(line)) == line
                and os.pread(files.anchor, ANCHOR_FILE_SIZE, 0) == head.anchor_bytes
            )
        except OSError:
            return False

    def _load_head(self) -> tuple[_Head, bytes]:
        """The head from the anchor and the log's tail, and what must precede the next record (a seal)."""
        files = self._files
        files.close_data()  # either file may have been replaced since it was opened: open both by path
        _ensure_private_dir(self.path.parent)
        witnessed = self._open_witness()
        anchor_file = self._open_anchor()
        if anchor_file is not None and anchor_file.anchor.seq > 0 and not self.path.exists():
            raise AuditLogCorrupted(
                f"{self.path} is missing, but its head anchor says it held {anchor_file.anchor.seq} records; "
                f"{_WHAT_TO_DO}"
            )
        files.log = _open_log(self.path)
        info = os.fstat(files.log)
        files.log_id = (info.st_ino, info.st_dev)
        if anchor_file is None:
            anchor_file = self._start_new_log(files.log)
        self._check_signature(anchor_file.anchor)
        state, first_hash, tail_end, size, witnessed_hash = _find_head(
            files.log, anchor_file.anchor, self.path, witnessed.seq if witnessed else None
        )
        if witnessed is not None:
            self._check_witness(witnessed, anchor_file.anchor, state, first_hash, witnessed_hash)
        prefix = tail_end.newline
        if tail_end.region is not None:
            seal, state = _seal(tail_end.region, state)
            prefix += seal
            first_hash = first_hash or state.last_hash
        if self.signer is not None and anchor_file.anchor.signed and state.last_seq > anchor_file.anchor.seq:
            note, state = _unsigned_tail_note(anchor_file.anchor.seq, state)
            prefix += note
        if anchor_file.legacy:
            anchor_file = self._replace_anchor_file(anchor_file.anchor)
        head = _Head(
            seq=state.last_seq,
            hash=state.last_hash,
            first_hash=first_hash,
            next_slot=1 - anchor_file.newest_slot,
            anchor_bytes=anchor_file.raw,
            log_end=size,
            last_line=b"",
        )
        return head, prefix

    def _check_signature(self, anchor: Anchor) -> None:
        """Refuse to extend a head this writer could not have signed, or cannot keep signed."""
        signer = self.signer
        if anchor.seq == 0:
            return
        if signer is None:
            if anchor.signed:
                raise AuditLogError(
                    f"{self.path} is signed (key {anchor.key_id}), and this writer has no signing key: appending "
                    "would leave its head unsigned; open it with the audit signing key"
                )
            return
        try:
            key_id = signer.key_id
            if anchor.signed:
                if anchor.key_id != key_id:
                    raise AuditLogCorrupted(
                        f"the head of {self.path} is signed by key {anchor.key_id}, not by this log's signing key "
                        f"{key_id} ({signer.path}): the log was rewritten elsewhere, or the key was replaced; "
                        f"{_WHAT_TO_DO}"
                    )
                assert anchor.first_hash is not None and anchor.signature is not None
                if not signer.verifier().valid(anchor.first_hash, anchor.seq, anchor.hash, anchor.signature):
                    raise AuditLogCorrupted(
                        f"the head anchor of {self.path} names this log's key but its signature is not valid: "
                        f"the anchor was forged; {_WHAT_TO_DO}"
                    )
                return
        except AuditKeyError as error:
            raise AuditLogError(f"cannot use the audit signing key: {error}") from None
        if head_predates_key(self.anchor_path, signer.path) is False:
            raise AuditLogCorrupted(
                f"the head anchor of {self.path} is not signed, but it was written after the audit signing key "
                f"{signer.path} existed, and every writer since then signs: the signature was stripped (the "
                f"log and anchor rewritten); {_WHAT_TO_DO}"
            )

    def _open_witness(self) -> Anchor | None:
        witness = self._witness
        if witness is None:
            return None
        try:
            held = witness.open()
        except WitnessError as error:
            raise AuditLogError(str(error)) from None
        if held is None or held.anchor.seq == 0:
            return None
        return held.anchor

    def _check_witness(
        self,
        witnessed: Anchor,
        anchor: Anchor,
        state: WalkerState,
        first_hash: str | None,
        witnessed_hash: str | None,
    ) -> None:
        # The witness is updated after each record is durable, so it may lag behind the log but never run
        # ahead of it: a log that ends before the witnessed record, or holds another record there, was
        # rolled back, replaced or rewritten. (A witnessed record further back than the anchor is left to
        # verification, which walks the whole log.)
        where = f"the witness {self.witness_path}"
        if first_hash is not None and witnessed.first_hash != first_hash:
            raise AuditLogCorrupted(
                f"{where} saw a log that began with another record: {self.path} was replaced; {_WHAT_TO_DO}"
            )
        if state.last_seq < witnessed.seq:
            raise AuditLogCorrupted(
                f"{where} saw record {witnessed.seq}, but {self.path} ends at record {state.last_seq}: the log "
                f"was rolled back or deleted; {_WHAT_TO_DO}"
            )
        known = anchor.hash if witnessed.seq == anchor.seq else witnessed_hash
        if known is not None and known != witnessed.hash:
            raise AuditLogCorrupted(
                f"{where} saw another record {witnessed.seq} than {self.path} holds: the log was rewritten; "
                f"{_WHAT_TO_DO}"
            )

    def _open_anchor(self) -> AnchorFile | None:
        try:
            fd = open_anchor(self.anchor_path, os.O_RDWR)
        except FileNotFoundError:
            return None
        except AnchorUnreadable as error:
            raise AuditLogCorrupted(f"{error}; {_WHAT_TO_DO}") from None
        self._files.anchor_opened(fd)
        try:
            return read_anchor_fd(fd, self.anchor_path)
        except AnchorUnreadable as error:
            raise AuditLogCorrupted(f"{error}; {_WHAT_TO_DO}") from None

    def _start_new_log(self, fd: int) -> AnchorFile:
        size = os.fstat(fd).st_size
        if size:
            raise AuditLogCorrupted(
                f"{self.path} holds {size} bytes but its head anchor {self.anchor_path} is missing, so a cut "
                f"tail could not be detected; {_WHAT_TO_DO}"
            )
        # The anchor exists before the first record does: a log with records and no anchor can then only mean
        # the anchor was removed, never that a writer died between the two steps.
        return self._replace_anchor_file(GENESIS_ANCHOR)

    def _replace_anchor_file(self, anchor: Anchor) -> AnchorFile:
        """A durable anchor file with both slots naming ``anchor``, opened for the slot updates that follow."""
        self._files.close_anchor()
        raw = anchor_file_bytes(anchor)
        _replace_anchor(self.anchor_path, raw)
        self._files.anchor_opened(open_anchor(self.anchor_path, os.O_RDWR))
        return AnchorFile(anchor=anchor, newest_slot=0, raw=raw)

    def _forget_inherited_state(self) -> None:
        # In a forked child: the descriptors share open file descriptions (and so the flock) with the
        # parent, and a thread that held the thread lock at fork time does not exist here.
        self._threads = threading.Lock()
        self._head = None
        self._files.close()
        if self._witness is not None:
            self._witness.close()


class _OpenFiles:
    """The descriptors an ``AuditLog`` keeps between appends (held apart so a finalizer can close them)."""

    def __init__(self, lock: ProcessLock) -> None:
        self.lock = lock
        self.log: int | None = None
        self.log_id: tuple[int, int] | None = None
        self.anchor: int | None = None
        #: inode, device and the size an anchor file has
        self.anchor_id: tuple[int, int, int] | None = None

    def anchor_opened(self, fd: int) -> None:
        info = os.fstat(fd)
        self.anchor, self.anchor_id = fd, (info.st_ino, info.st_dev, ANCHOR_FILE_SIZE)

    def close_anchor(self) -> None:
        fd, self.anchor, self.anchor_id = self.anchor, None, None
        if fd is not None:
            os.close(fd)

    def close_data(self) -> None:
        self.close_anchor()
        fd, self.log, self.log_id = self.log, None, None
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        self.close_data()
        self.lock.close()


_LIVE_LOGS: weakref.WeakSet[AuditLog] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for log in list(_LIVE_LOGS):
        log._forget_inherited_state()


os.register_at_fork(after_in_child=_after_fork_in_child)


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


def _find_head(
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


def _unsigned_tail_note(anchored_seq: int, head: WalkerState) -> tuple[bytes, WalkerState]:
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
        f"(records were removed or edited); {_WHAT_TO_DO}"
    )


def _encode_record(record: SessionRecord | Mapping[str, Any]) -> EncodedFields:
    fields = _record_fields(record)
    try:
        return encode_fields(fields)
    except (ValueError, TypeError) as error:
        raise ValueError(f"the record is not canonical JSON (RFC 8785): {error}") from None
    except RecursionError:
        raise ValueError("the record is not canonical JSON (RFC 8785): it contains itself") from None


def _with_principal(
    record: SessionRecord | Mapping[str, Any], principal: str
) -> SessionRecord | Mapping[str, Any]:
    if isinstance(record, SessionRecord):
        return record if record.principal is not None else record.model_copy(update={"principal": principal})
    if isinstance(record, Mapping) and record.get("principal") is None:
        return {**record, "principal": principal}
    return record


def _record_fields(record: SessionRecord | Mapping[str, Any]) -> dict[str, Any]:
    if type(record) is not dict and isinstance(record, SessionRecord):
        return record.to_json()
    if not isinstance(record, Mapping):
        raise TypeError(f"an audit record is a SessionRecord or a mapping, not {type(record).__name__}")
    kind = record.get("type", "action")
    model = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    if model is not None:
        return model.model_validate({"type": kind, **record}).to_json()
    if kind in (TORN_TAIL_TYPE, UNSIGNED_TAIL_TYPE):
        raise ValueError(f"type {kind!r} is reserved for entries the log writes itself")
    if not isinstance(kind, str):
        raise ValueError("a record's 'type' must be a string")
    clash = RESERVED_KEYS.intersection(record)
    if clash:
        raise ValueError(f"a record may not carry {sorted(clash)}: the log sets seq, prev and hash itself")
    return dict(record)


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
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_anchor_slot(fd: int, slot: int, data: bytes) -> None:
    # In place, no fsync: the module docstring says why a lagging slot is safe. One pwrite of one aligned
    # sector cannot be split by the process dying, and the slot it overwrites is never the newest.
    written = os.pwrite(fd, data, slot * ANCHOR_SLOT_SIZE)
    if written != len(data):
        raise AuditLogError(
            f"the head anchor took only {written} of {len(data)} bytes; the record itself is on disk, and the "
            "next append rewrites the anchor"
        )


def _replace_anchor(path: Path, data: bytes) -> None:
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
        _write_all(fd, data)
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
