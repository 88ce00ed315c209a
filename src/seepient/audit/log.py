"""The append-only, hash-chained audit log: one fsynced JSON line per entry plus a two-slot head anchor.

Line format: ``{"seq": n, "prev": <hash of entry n-1>, ...record fields..., "hash": <SHA-256 of the RFC 8785
canonical JSON of everything but hash>}``; entry 1 chains to ``GENESIS_HASH``. ``<log>.anchor`` names the last
anchored ``seq``/``hash`` and the first entry's hash, so removing records from the end shows on verification.

What a crash or power loss can leave behind:

- Every record whose ``append`` returned is on disk: its line goes out in one ``write`` and is fsynced
  before ``append`` returns (the runtime writes an action's intent so, before the action starts). A record
  appended with ``append_settling`` (an action's outcome) has its line written, in order, before the call
  returns, and its fsync and checkpoint finish on a worker thread while the caller goes on; the next append
  and ``close`` wait for them. Until then it is exactly where a record is during ``append``'s own fsync:
  written, not yet durable, not yet anchored.
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
import atexit
import contextlib
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from seepient.audit._chain import (
    TORN_TAIL_TYPE,
    UNSIGNED_TAIL_TYPE,
    EncodedFields,
    WalkerState,
    anchor_path_for,
    encode_entry,
    encode_fields,
    lock_path_for,
)
from seepient.audit._lock import LockTimeout, ProcessLock
from seepient.audit._per_process import PerProcess
from seepient.audit.anchor import (
    ANCHOR_FILE_SIZE,
    ANCHOR_SLOT_SIZE,
    GENESIS_ANCHOR,
    Anchor,
    AnchorFile,
    AnchorUnreadable,
    anchor_file_bytes,
    anchor_slot,
    open_anchor,
    read_anchor_fd,
)
from seepient.audit.log_files import (
    WHAT_TO_DO,
    AuditLogCorrupted,
    AuditLogError,
    ensure_private_dir,
    find_head,
    line_ending_at,
    open_log,
    replace_anchor,
    seal_region,
    unsigned_tail_note,
    write_all,
    write_anchor_slot,
)
from seepient.audit.record import RECORD_TYPES, RESERVED_KEYS, SessionRecord
from seepient.audit.signing import AuditKeyError, head_predates_key
from seepient.audit.witness import WitnessError, WitnessFile

if TYPE_CHECKING:
    from seepient.audit.recovery import OpenIntent
    from seepient.audit.signing import CheckpointSigner


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
        self._files = _OpenFiles(ProcessLock(lock_path_for(self.path), make_parent=ensure_private_dir))
        self._witness = WitnessFile(witness_path) if witness_path is not None else None
        self._head: _Head | None = None
        # flock excludes other openings of the lock file, not threads sharing this object's descriptor.
        self._threads = threading.Lock()
        #: why the last ``append_settling`` record did not become durable, raised by the next append or close
        self._settle_error: BaseException | None = None
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

    def preload(self) -> None:
        """Read an existing log's head now (a session does, from a thread, while its first model request is
        out), so its first record does not. The head is then trusted by the next append exactly as one this
        object wrote (``_files_as_left``: same files, same size, same last line and anchor bytes); a log that
        does not exist yet, or whose tail needs a seal, is left to the first record. The process's settler
        thread is started here too, if it is not running yet, so the first outcome does not start it."""
        _Settler.shared()
        if not os.path.lexists(self._anchor_name):
            return
        with self._locked():
            if self._head is not None:
                return
            head, prefix = self._load_head()
            log_fd = self._files.log
            line = line_ending_at(log_fd, head.log_end) if log_fd is not None and not prefix else None
            if line:
                self._head = head._replace(last_line=line)

    def append(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        """Chain ``record`` onto the log and return its place once it is on disk (fsynced).

        A log opened with a ``principal`` stamps it on every record that does not name one.
        """
        fields = self._fields(record)
        with self._locked():
            return self._append_locked(fields)

    def append_settling(self, record: SessionRecord | Mapping[str, Any]) -> AuditEntry:
        """``append`` for a record nothing waits on (an action's outcome): its line is written, after every
        record appended before it, when this returns; the fsync and signed checkpoint that make it durable
        finish on a worker thread meanwhile, and the next append or ``close`` waits for them (raising
        ``AuditLogError`` if they failed). A refusal to write the line at all is raised here, as by ``append``.
        """
        fields = self._fields(record)
        self._acquire()
        try:
            entry, settle = self._write_locked(fields)
        except BaseException:
            self._release()
            raise
        try:
            _Settler.shared().submit(lambda: self._settle(settle))
        except BaseException as error:
            # No thread can take it (none can be started while the interpreter shuts down, or anything else
            # went wrong handing it over): settle here, which lets both locks go, so nothing waits on a record
            # no thread will ever finish.
            self._settle(settle)
            if not isinstance(error, RuntimeError):
                raise
            self._raise_settle_error()
        return entry

    def _settle(self, settle: Callable[[], None]) -> None:
        """On the settler's thread, holding both locks the append took: make the record durable, then let go."""
        try:
            settle()
        except BaseException as error:
            self._settle_error = error
        finally:
            self._release()

    def _raise_settle_error(self) -> None:
        error, self._settle_error = self._settle_error, None
        if error is not None:
            raise AuditLogError(
                f"the previous record appended to {self.path} could not be made durable: {error}"
            ) from error

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
        """Release the open files once the last record is durable; a later ``append`` opens them again.
        Raises ``AuditLogError`` when a record ``append_settling`` wrote could not be made durable."""
        with self._threads:
            self._head = None
            self._files.close()
            if self._witness is not None:
                self._witness.close()
            self._raise_settle_error()

    def wait_settled(self) -> None:
        """Return once every record appended so far is durable (what ``append_settling`` left to finish)."""
        with self._threads:
            pass

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
        self._acquire()
        try:
            yield
        finally:
            self._release()

    def _acquire(self) -> None:
        """Take this object's thread lock (after a settling record's fsync, which holds it), then the process
        lock; raises what the settling record's fsync failed with, if it did."""
        threads, timeout = self._threads, self._lock_timeout
        if not threads.acquire(blocking=False):
            started = time.monotonic()
            if not threads.acquire(timeout=timeout):
                raise self._lock_timeout_error()
            timeout = max(0.0, timeout - (time.monotonic() - started))
        try:
            self._raise_settle_error()
            lock = self._files.lock
            try:
                lock.acquire(timeout)
            except LockTimeout:
                raise self._lock_timeout_error() from None
            except OSError as error:
                raise AuditLogError(
                    f"cannot open the audit log's lock file {lock.path}: {error.strerror or error}"
                ) from None
        except BaseException:
            threads.release()
            raise

    def _release(self) -> None:
        # Both locks may be let go by another thread than took them (the settler's): a threading.Lock and a
        # flock belong to no thread.
        try:
            self._files.lock.release()
        finally:
            self._threads.release()

    def _lock_timeout_error(self) -> AuditLogError:
        return AuditLogError(
            f"could not lock {self._files.lock.path} within {self._lock_timeout:g}s: another Seepient "
            "process is holding the audit log; try again, or find the stuck process"
        )

    def _append_locked(self, fields: EncodedFields) -> AuditEntry:
        entry, _ = self._write_locked(fields, durably=True)
        return entry

    def _write_locked(
        self, fields: EncodedFields, *, durably: bool = False
    ) -> tuple[AuditEntry, Callable[[], None]]:
        """Chain ``fields`` onto the head; ``durably``: write, fsync and checkpoint now. Otherwise write the line
        now and give back what makes it durable and checkpoints it, to run before the locks are let go."""
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

        def write() -> None:
            write_all(log_fd, payload)

        def sync() -> None:
            os.fsync(log_fd)

        def write_durably() -> None:
            write()
            sync()

        def checkpoint(make_durable: Callable[[], None]) -> None:
            # Everything else is computed before the write: the process sleeps in fsync, and work done after
            # it runs on cold caches, which costs several times as much as the same work done here. The
            # checkpoint's signature is made during the fsync, by the signer's thread.
            slot = self._durably_then_checkpoint(make_durable, seq, digest, first_hash)
            if head.next_slot:
                anchor_bytes = head.anchor_bytes[:ANCHOR_SLOT_SIZE] + slot
            else:
                anchor_bytes = slot + head.anchor_bytes[ANCHOR_SLOT_SIZE:]
            after = _Head(
                seq, digest, first_hash, 1 - head.next_slot, anchor_bytes, head.log_end + len(payload), line
            )
            write_anchor_slot(files.anchor, head.next_slot, slot)
            if self._witness is not None:
                self._witness.record(slot)
            self._head = after

        if durably:
            checkpoint(write_durably)
            return entry, lambda: None
        if self.signer is not None:
            try:
                # As in ``_durably_then_checkpoint``: the key is loaded before anything is written.
                _ = self.signer.key_id
            except AuditKeyError as error:
                raise AuditLogError(f"cannot sign the audit log's head: {error}") from None
        write()
        return entry, lambda: checkpoint(sync)

    def _seal_locked(self) -> None:
        """Write only what must precede the next record (the seal of torn bytes), and checkpoint it."""
        self._head = None
        head, prefix = self._load_head()
        if not prefix.strip(b"\n"):
            if prefix:  # only a missing newline: the cut line was a whole entry, which ends the chain now
                write_all(self._files.log, prefix)
                os.fsync(self._files.log)
            return
        log_fd = self._files.log

        def write_durably() -> None:
            write_all(log_fd, prefix)
            os.fsync(log_fd)

        assert head.first_hash is not None
        slot = self._durably_then_checkpoint(write_durably, head.seq, head.hash, head.first_hash)
        write_anchor_slot(self._files.anchor, head.next_slot, slot)
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
        ensure_private_dir(self.path.parent)
        witnessed = self._open_witness()
        anchor_file = self._open_anchor()
        if anchor_file is not None and anchor_file.anchor.seq > 0 and not self.path.exists():
            raise AuditLogCorrupted(
                f"{self.path} is missing, but its head anchor says it held {anchor_file.anchor.seq} records; "
                f"{WHAT_TO_DO}"
            )
        files.log = open_log(self.path)
        info = os.fstat(files.log)
        files.log_id = (info.st_ino, info.st_dev)
        if anchor_file is None:
            anchor_file = self._start_new_log(files.log)
        self._check_signature(anchor_file.anchor)
        state, first_hash, tail_end, size, witnessed_hash = find_head(
            files.log, anchor_file.anchor, self.path, witnessed.seq if witnessed else None
        )
        if witnessed is not None:
            self._check_witness(witnessed, anchor_file.anchor, state, first_hash, witnessed_hash)
        prefix = tail_end.newline
        if tail_end.region is not None:
            seal, state = seal_region(tail_end.region, state)
            prefix += seal
            first_hash = first_hash or state.last_hash
        if self.signer is not None and anchor_file.anchor.signed and state.last_seq > anchor_file.anchor.seq:
            note, state = unsigned_tail_note(anchor_file.anchor.seq, state)
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
                        f"{WHAT_TO_DO}"
                    )
                assert anchor.first_hash is not None and anchor.signature is not None
                if not signer.verifier().valid(anchor.first_hash, anchor.seq, anchor.hash, anchor.signature):
                    raise AuditLogCorrupted(
                        f"the head anchor of {self.path} names this log's key but its signature is not valid: "
                        f"the anchor was forged; {WHAT_TO_DO}"
                    )
                return
        except AuditKeyError as error:
            raise AuditLogError(f"cannot use the audit signing key: {error}") from None
        if head_predates_key(self.anchor_path, signer.path) is False:
            raise AuditLogCorrupted(
                f"the head anchor of {self.path} is not signed, but it was written after the audit signing key "
                f"{signer.path} existed, and every writer since then signs: the signature was stripped (the "
                f"log and anchor rewritten); {WHAT_TO_DO}"
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
                f"{where} saw a log that began with another record: {self.path} was replaced; {WHAT_TO_DO}"
            )
        if state.last_seq < witnessed.seq:
            raise AuditLogCorrupted(
                f"{where} saw record {witnessed.seq}, but {self.path} ends at record {state.last_seq}: the log "
                f"was rolled back or deleted; {WHAT_TO_DO}"
            )
        known = anchor.hash if witnessed.seq == anchor.seq else witnessed_hash
        if known is not None and known != witnessed.hash:
            raise AuditLogCorrupted(
                f"{where} saw another record {witnessed.seq} than {self.path} holds: the log was rewritten; "
                f"{WHAT_TO_DO}"
            )

    def _open_anchor(self) -> AnchorFile | None:
        try:
            fd = open_anchor(self.anchor_path, os.O_RDWR)
        except FileNotFoundError:
            return None
        except AnchorUnreadable as error:
            raise AuditLogCorrupted(f"{error}; {WHAT_TO_DO}") from None
        self._files.anchor_opened(fd)
        try:
            return read_anchor_fd(fd, self.anchor_path)
        except AnchorUnreadable as error:
            raise AuditLogCorrupted(f"{error}; {WHAT_TO_DO}") from None

    def _start_new_log(self, fd: int) -> AnchorFile:
        size = os.fstat(fd).st_size
        if size:
            raise AuditLogCorrupted(
                f"{self.path} holds {size} bytes but its head anchor {self.anchor_path} is missing, so a cut "
                f"tail could not be detected; {WHAT_TO_DO}"
            )
        # The anchor exists before the first record does: a log with records and no anchor can then only mean
        # the anchor was removed, never that a writer died between the two steps.
        return self._replace_anchor_file(GENESIS_ANCHOR)

    def _replace_anchor_file(self, anchor: Anchor) -> AnchorFile:
        """A durable anchor file with both slots naming ``anchor``, opened for the slot updates that follow."""
        self._files.close_anchor()
        raw = anchor_file_bytes(anchor)
        replace_anchor(self.anchor_path, raw)
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


class _Settler:
    """The one daemon thread of a process that finishes settling records, one at a time, in the order they were
    written: one for every log and session, since a thread started per session cost each session's first
    outcome a start that had to wait for the interpreter lock."""

    _exit_hook_registered = False

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        if not _Settler._exit_hook_registered:
            # Registered after the log's finalizers (``weakref.finalize`` hooks into atexit with the first
            # log), so it runs before them: they close the files a settling record is still being synced to.
            _Settler._exit_hook_registered = True
            atexit.register(_settle_before_exit)
        threading.Thread(target=self._run, name="seepient-audit-settler", daemon=True).start()

    @classmethod
    def shared(cls) -> _Settler:
        """The process's settler, started at its first use (a forked child has no thread: it starts its own)."""
        return _ONE_SETTLER.get()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            self._jobs.get()()


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


def _settle_before_exit() -> None:
    # The settler is a daemon thread: an exit must not cut off a record it is making durable.
    for log in list(_LIVE_LOGS):
        with contextlib.suppress(AuditLogError):
            log.wait_settled()


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


_ONE_SETTLER = PerProcess(_Settler)
