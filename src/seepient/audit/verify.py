"""Verification of the audit log: re-walks the hash chain, checks it against the signed head anchor and the
witness, pairs every outcome with its intent, and names the actions a crash interrupted.

It streams the file once; memory grows only with the number of actions (their ids), so a log of 100k
records verifies in seconds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from seepient.audit._chain import (
    UNSIGNED_TAIL_TYPE,
    ChainedEntry,
    ChainProblem,
    ChainWalker,
    anchor_path_for,
    lock_path_for,
)
from seepient.audit._lock import LockTimeout, ProcessLock
from seepient.audit.anchor import Anchor, AnchorFile, AnchorUnreadable, read_anchor
from seepient.audit.liveness import writer_alive
from seepient.audit.record import (
    ACTION_TYPE,
    INTENT_TYPE,
    OUTCOME_TYPE,
    FileState,
    IntentRecord,
    Writer,
)
from seepient.audit.recovery import file_states
from seepient.audit.signing import AuditKeyError, CheckpointVerifier, head_predates_key
from seepient.audit.witness import WitnessError, read_witness
from seepient.protocol.frozen import deferred_config

_MAX_LISTED_WARNINGS = 20
_LOCK_WAIT_SECONDS = 10.0

SignatureStatus = Literal["valid", "unsigned", "unchecked", "none"]
"""``valid``: the head is a checkpoint signed by the pinned key. ``unsigned``: no signature and no key to
expect one from (a log written before signing, or without a key). ``unchecked``: signed, but no public key
was given to check it. ``none``: the log is empty or absent."""


class InterruptedAction(BaseModel):
    """An action whose process ended between its intent and its outcome."""

    model_config = deferred_config(frozen=True, extra="forbid")

    seq: int
    """The intent's sequence number."""
    action_id: str
    session_id: str
    tool: str
    summary: str
    state: Literal["open", "running", "closed"]
    """``open``: no outcome in the log; ``running``: no outcome yet, and its process still runs (in progress,
    not interrupted); ``closed``: a later start found it open and recorded it as interrupted."""
    files: tuple[FileState, ...] = ()
    """For a file change: what each named file holds (now for ``open``, when closed for ``closed``)."""
    closed_by: str | None = None


class VerifyReport(BaseModel):
    """The verdict on one log. ``records`` counts the entries that verified (the intact prefix when not ok)."""

    model_config = deferred_config(frozen=True, extra="forbid")

    path: str
    ok: bool
    exists: bool
    records: int
    first_bad_seq: int | None = None
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    head_seq: int = 0
    head_hash: str | None = None
    signature: SignatureStatus = "none"
    key_id: str | None = None
    """The key the head checkpoint is signed by (compare it with the fingerprint you noted)."""
    checkpoint_seq: int | None = None
    """The record the signed checkpoint covers; later ones are listed in ``warnings``."""
    witness: str | None = None
    witness_seq: int | None = None
    interrupted: tuple[InterruptedAction, ...] = ()


def verify_log(path: Path, *, public_key: Path | None = None, witness: Path | None = None) -> VerifyReport:
    """Check every entry's hash and link, the sealed torn tails, the head anchor, its signature against
    ``public_key`` and the witness at ``witness``; pair outcomes with intents; name the first bad seq."""
    path = Path(path)
    try:
        verifier = CheckpointVerifier.from_file(public_key) if public_key is not None else None
    except AuditKeyError as error:
        return _failed(path, records=0, seq=None, problem=str(error))
    checks = _Checks(verifier=verifier, public_key=public_key, witness=witness)
    # Writers only ever add bytes after the anchored record, so a pass without the lock that finds the log
    # intact is true of what it read, and verifying never stalls the runtime's appends. Only a failing pass
    # might have caught an append half-way (or an anchor slot mid-update), so it is repeated holding the
    # writers' lock before it counts.
    report, settled = _verify_once(path, checks)
    if settled:
        return report
    with _reader_lock(path) as lock_warning:
        report, _ = _verify_once(path, checks)
    if lock_warning:
        report = report.model_copy(update={"warnings": (lock_warning, *report.warnings)})
    return report


@dataclass(frozen=True)
class _Checks:
    verifier: CheckpointVerifier | None
    public_key: Path | None
    witness: Path | None


def _verify_once(path: Path, checks: _Checks) -> tuple[VerifyReport, bool]:
    """The report, and whether it is settled (nothing in it could be an append caught half-way)."""
    anchor_path = anchor_path_for(path)
    try:
        # The witness and the anchor are read before the log: whatever a writer adds afterwards lies beyond.
        witnessed = read_witness(checks.witness) if checks.witness is not None else None
    except WitnessError as error:
        return _failed(path, records=0, seq=None, problem=str(error)), True
    try:
        anchor_file = read_anchor(anchor_path)
    except AnchorUnreadable as error:
        return _failed(path, records=0, seq=None, problem=f"the head anchor is damaged: {error}"), False
    if not path.exists():
        if anchor_file is not None and anchor_file.anchor.seq > 0:
            missing = (
                f"the log file is missing, but its head anchor says it held {anchor_file.anchor.seq} records"
            )
        elif witnessed is not None and witnessed.anchor.seq > 0:
            missing = (
                f"the log file and its anchor are missing, but the witness {checks.witness} saw "
                f"{witnessed.anchor.seq} records"
            )
        else:
            return VerifyReport(path=str(path), ok=True, exists=False, records=0), True
        return _failed(path, records=0, seq=1, problem=f"{missing} (the log was deleted)"), False
    try:
        report = _verify_existing(path, anchor_file, anchor_path, checks, witnessed)
    except OSError as error:
        report = _failed(path, records=0, seq=None, problem=f"the log cannot be read: {error.strerror}")
    return report, report.ok and (anchor_file is None or anchor_file.damaged_slot is None)


def _verify_existing(
    path: Path,
    anchor_file: AnchorFile | None,
    anchor_path: Path,
    checks: _Checks,
    witnessed: AnchorFile | None,
) -> VerifyReport:
    anchor = anchor_file.anchor if anchor_file is not None else None
    seen_witness = witnessed.anchor if witnessed is not None and witnessed.anchor.seq > 0 else None
    walker = ChainWalker()
    actions = _Actions()
    problem: ChainProblem | None = None
    first_hash: str | None = None
    size = 0
    with path.open("rb") as stream:
        for line_no, raw in enumerate(stream, start=1):
            size += len(raw)
            entry = walker.feed(raw, line_no)
            if entry is None:
                continue
            if entry.seq == 1:
                first_hash = entry.hash
            problem = actions.feed(entry) or _witness_mismatch(entry, seen_witness, checks.witness)
            if problem is not None:
                break
            if anchor is None:
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
    if problem is None:
        problem = _signature_problem(anchor, anchor_path, checks)
    if problem is None and seen_witness is not None:
        problem = _witness_problem(seen_witness, head.last_seq, first_hash, checks)
    if problem is not None:
        intact = min(head.last_seq, problem.seq - 1)
        return _failed(path, records=intact, seq=problem.seq, problem=problem.sentence)
    return VerifyReport(
        path=str(path),
        ok=True,
        exists=True,
        records=head.last_seq,
        warnings=_warnings(walker, anchor_file, actions, checks, seen_witness),
        head_seq=head.last_seq,
        head_hash=head.last_hash if head.last_seq else None,
        signature=_signature_status(anchor, checks),
        key_id=anchor.key_id if anchor is not None else None,
        checkpoint_seq=anchor.seq if anchor is not None and anchor.signed else None,
        witness=str(checks.witness) if checks.witness is not None else None,
        witness_seq=seen_witness.seq if seen_witness is not None else None,
        interrupted=actions.interrupted(),
    )


@dataclass
class _Open:
    seq: int
    digest: Any
    fields: dict[str, Any]


class _Actions:
    """Pairs each outcome with the intent before it: one intent and at most one outcome per action."""

    def __init__(self) -> None:
        self.open: dict[str, _Open] = {}
        self.done: dict[str, int] = {}
        self.closed: list[InterruptedAction] = []
        self.unsigned_tails: list[str] = []

    def feed(self, entry: ChainedEntry) -> ChainProblem | None:
        kind, fields, seq = entry.type, entry.fields, entry.seq
        if kind == INTENT_TYPE:
            action_id, digest = _action_key(fields.get("action"))
            if action_id is None:
                return ChainProblem(seq, f"record {seq} is an intent without an action id and digest")
            earlier = self._seen(action_id)
            if earlier is not None:
                return ChainProblem(
                    seq,
                    f"record {seq} is a second intent for action {action_id} (already recorded at seq {earlier})",
                )
            self.open[action_id] = _Open(seq, digest, fields)
        elif kind == OUTCOME_TYPE:
            return self._outcome(seq, fields)
        elif kind == ACTION_TYPE:
            action_id, _ = _action_key(fields.get("action"))
            if action_id is not None:
                earlier = self._seen(action_id)
                if earlier is not None:
                    return ChainProblem(
                        seq,
                        f"record {seq} records action {action_id} a second time (already recorded at seq {earlier})",
                    )
                self.done[action_id] = seq
        elif kind == UNSIGNED_TAIL_TYPE:
            first, last = fields.get("first_seq"), fields.get("last_seq")
            span = f"record {first}" if first == last else f"records {first}–{last}"
            self.unsigned_tails.append(
                f"{span} followed the last signed checkpoint when a writer next opened the log (seq {seq} says "
                "so): a writer killed between writing a record and signing its checkpoint leaves this, and so "
                "does anyone without the key who appended them"
            )
        return None

    def _outcome(self, seq: int, fields: dict[str, Any]) -> ChainProblem | None:
        action_id, digest = fields.get("action_id"), fields.get("digest")
        if not isinstance(action_id, str):
            return ChainProblem(seq, f"record {seq} is an outcome that names no action")
        intent = self.open.pop(action_id, None)
        if intent is None:
            earlier = self.done.get(action_id)
            if earlier is not None:
                return ChainProblem(
                    seq,
                    f"record {seq} is a second outcome for action {action_id} (it was closed at seq {earlier})",
                )
            return ChainProblem(
                seq, f"record {seq} is an outcome for action {action_id}, which has no intent before it"
            )
        if digest != intent.digest:
            return ChainProblem(
                seq,
                f"record {seq} is an outcome for action {action_id} with another digest than its intent "
                f"(seq {intent.seq}): it does not describe the action that was approved",
            )
        self.done[action_id] = seq
        outcome = fields.get("outcome")
        closed_by = fields.get("recovered_by")
        if (
            isinstance(outcome, dict)
            and outcome.get("status") == "interrupted"
            and isinstance(closed_by, str)
        ):
            files = _recorded_states(fields.get("files"))
            self.closed.append(_interrupted(intent, "closed", files, closed_by))
        return None

    def _seen(self, action_id: str) -> int | None:
        if action_id in self.open:
            return self.open[action_id].seq
        return self.done.get(action_id)

    def interrupted(self) -> tuple[InterruptedAction, ...]:
        still_open = []
        for intent in self.open.values():
            record = _intent_record(intent.fields)
            running = False
            files: tuple[FileState, ...] = ()
            if record is not None:
                running = writer_alive(record.writer) is True
                files = file_states(record)
            else:
                writer = intent.fields.get("writer")
                with contextlib.suppress(ValidationError, TypeError):
                    running = writer_alive(Writer.model_validate(writer)) is True
            still_open.append(_interrupted(intent, "running" if running else "open", files, None))
        return tuple(sorted((*self.closed, *still_open), key=lambda action: action.seq))


def _action_key(action: Any) -> tuple[str | None, Any]:
    if not isinstance(action, dict) or not isinstance(action.get("id"), str):
        return None, None
    return action["id"], action.get("digest")


def _intent_record(fields: dict[str, Any]) -> IntentRecord | None:
    try:
        return IntentRecord.from_entry(fields)
    except ValidationError:
        return None


def _recorded_states(raw: Any) -> tuple[FileState, ...]:
    if not isinstance(raw, list):
        return ()
    states = []
    for item in raw:
        with contextlib.suppress(ValidationError):
            states.append(FileState.model_validate(item))
    return tuple(states)


def _interrupted(
    intent: _Open,
    state: Literal["open", "running", "closed"],
    files: tuple[FileState, ...],
    closed_by: str | None,
) -> InterruptedAction:
    action = intent.fields.get("action") or {}
    return InterruptedAction(
        seq=intent.seq,
        action_id=str(action.get("id", "")),
        session_id=str(intent.fields.get("session_id", "")),
        tool=str(action.get("tool", "")),
        summary=str(action.get("summary", "")),
        state=state,
        files=files,
        closed_by=closed_by,
    )


def _witness_mismatch(
    entry: ChainedEntry, witnessed: Anchor | None, where: Path | None
) -> ChainProblem | None:
    if witnessed is None or entry.seq != witnessed.seq or entry.hash == witnessed.hash:
        return None
    return ChainProblem(
        entry.seq,
        f"record {entry.seq} is not the record the witness {where} saw there: the log was rewritten from that "
        "point (its hashes recomputed)",
    )


def _witness_problem(
    witnessed: Anchor, last_seq: int, first_hash: str | None, checks: _Checks
) -> ChainProblem | None:
    where = checks.witness
    verifier = checks.verifier
    if verifier is not None:
        if not witnessed.signed or witnessed.key_id != verifier.key_id:
            return ChainProblem(
                1, f"the witness {where} holds a checkpoint not signed by the audit key {verifier.key_id}"
            )
        assert witnessed.first_hash is not None and witnessed.signature is not None
        if not verifier.valid(witnessed.first_hash, witnessed.seq, witnessed.hash, witnessed.signature):
            return ChainProblem(1, f"the witness {where} holds a checkpoint whose signature is not valid")
    if first_hash is not None and witnessed.first_hash != first_hash:
        return ChainProblem(
            1, f"the witness {where} saw a log that began with another record: this log was replaced"
        )
    if last_seq < witnessed.seq:
        return ChainProblem(
            last_seq + 1,
            f"the log ends at record {last_seq}, but the witness {where} saw record {witnessed.seq}: the log was "
            "rolled back to an earlier state (or cut, with its anchor rewritten)",
        )
    return None


def _signature_problem(anchor: Anchor | None, anchor_path: Path, checks: _Checks) -> ChainProblem | None:
    verifier = checks.verifier
    if verifier is None or anchor is None or anchor.seq == 0:
        return None
    if not anchor.signed:
        assert checks.public_key is not None
        if head_predates_key(anchor_path, checks.public_key):
            return None  # written before the key existed: a log from before signing, reported as unsigned
        return ChainProblem(
            anchor.seq,
            f"the head anchor is not signed, though the audit key {verifier.key_id} existed when it was written: "
            "the log and its anchor were rewritten by someone without the key",
        )
    if anchor.key_id != verifier.key_id:
        return ChainProblem(
            anchor.seq,
            f"the head checkpoint is signed by key {anchor.key_id}, not by the audit key {verifier.key_id}: "
            "the log and its anchor were rewritten and signed with another key",
        )
    assert anchor.first_hash is not None and anchor.signature is not None
    if not verifier.valid(anchor.first_hash, anchor.seq, anchor.hash, anchor.signature):
        return ChainProblem(
            anchor.seq,
            f"the head checkpoint's signature is not valid for key {verifier.key_id}: the anchor was forged "
            "(the log rewritten without the key)",
        )
    return None


def _signature_status(anchor: Anchor | None, checks: _Checks) -> SignatureStatus:
    if anchor is None or anchor.seq == 0:
        return "none"
    if not anchor.signed:
        return "unsigned"
    return "valid" if checks.verifier is not None else "unchecked"


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


def _warnings(
    walker: ChainWalker,
    anchor_file: AnchorFile | None,
    actions: _Actions,
    checks: _Checks,
    witnessed: Anchor | None,
) -> tuple[str, ...]:
    anchor = anchor_file.anchor if anchor_file is not None else None
    notes: list[str] = []
    if checks.witness is not None and witnessed is None:
        notes.append(
            f"the witness {checks.witness} holds no checkpoint yet: a rollback or deletion could not be detected"
        )
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
    notes.extend(actions.unsigned_tails)
    notes.extend(
        f"line {line_no} is formatted differently from how Seepient writes it; its content still matches its hash"
        for line_no in walker.reformatted
    )
    if anchor is not None and walker.state.last_seq > anchor.seq:
        first, last = anchor.seq + 1, walker.state.last_seq
        which = f"record {first} comes" if first == last else f"records {first}–{last} come"
        if anchor.signed:
            notes.append(
                f"{which} after the last signed checkpoint (seq {anchor.seq}): a writer stopped between writing "
                "a record and signing the head, or they were appended without the key; the next append marks "
                "them as found unsigned"
            )
        else:
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
