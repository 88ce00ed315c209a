"""The audit log's head anchor: its two-slot file format (each slot one JSON checkpoint padded to a sector,
signed or not), reading and parsing it, and the single-document format earlier versions wrote."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, model_validator

from seepient.audit._chain import GENESIS_HASH, MAX_SAFE_INT
from seepient.protocol.errors import AuditError
from seepient.protocol.frozen import deferred_config

_T = TypeVar("_T")
_Refusal = Callable[[str], Exception]
"""Builds the exception raised for a file that cannot be used, from its message."""

#: The anchor file: two slots of ``ANCHOR_SLOT_SIZE`` bytes, each one JSON object padded with spaces.
ANCHOR_FORMAT = "seepient-audit-anchor/2"
#: A slot that also carries the Ed25519 signature of its checkpoint (``signing.py``) and the signing key's id.
SIGNED_ANCHOR_FORMAT = "seepient-audit-anchor/3"
#: The single-document anchor earlier versions replaced on every append; still read, converted on append.
LEGACY_ANCHOR_FORMAT = "seepient-audit-anchor/1"
# 512 bytes, aligned: one disk sector, the unit storage writes all-or-nothing on the disks the log's
# durability notes (log.py) assume, so a slot cut off by a power loss reads old, new, or fails its check.
ANCHOR_SLOT_SIZE = 512
ANCHOR_SLOTS = 2
ANCHOR_FILE_SIZE = ANCHOR_SLOT_SIZE * ANCHOR_SLOTS

_HEX64 = r"^[0-9a-f]{64}$"
_KEY_ID = r"^ed25519:[0-9a-f]{16}$"
# An Ed25519 signature is 64 bytes: 86 base64url characters without padding.
_SIGNATURE = r"^[A-Za-z0-9_-]{86}$"
# Larger anchors are not anchors; reading a bounded prefix keeps a planted huge file from costing memory.
_ANCHOR_READ_LIMIT = 64 * 1024


class Anchor(BaseModel):
    """The head anchor: the last anchored entry and the first entry's hash, so a cut tail or a swapped log shows."""

    model_config = deferred_config(frozen=True, extra="forbid")

    genesis: str = GENESIS_HASH
    first_hash: str | None = Field(default=None, pattern=_HEX64)
    seq: int = Field(ge=0, le=MAX_SAFE_INT)
    hash: str = Field(pattern=_HEX64)
    key_id: str | None = Field(default=None, pattern=_KEY_ID)
    """The signing key's id when this head is a signed checkpoint; ``signature`` is then its signature."""
    signature: str | None = Field(default=None, pattern=_SIGNATURE)

    @property
    def signed(self) -> bool:
        return self.signature is not None

    @model_validator(mode="after")
    def _consistent(self) -> Anchor:
        if (self.key_id is None) != (self.signature is None):
            raise ValueError("a signed anchor names both its key and its signature")
        if self.genesis != GENESIS_HASH:
            raise ValueError("genesis is not Seepient's genesis value")
        if self.seq == 0 and (self.hash != GENESIS_HASH or self.first_hash is not None):
            raise ValueError("an anchor at seq 0 must point at the genesis value and name no first record")
        if self.seq >= 1 and self.first_hash is None:
            raise ValueError("an anchor past seq 0 must name the first record's hash")
        if self.seq == 1 and self.first_hash != self.hash:
            raise ValueError("at seq 1 the first record is the head record, but the two hashes differ")
        return self


class _LegacyAnchor(Anchor):
    format: Literal["seepient-audit-anchor/1"]


class _Slot(Anchor):
    format: Literal["seepient-audit-anchor/2", "seepient-audit-anchor/3"]
    check: str

    @model_validator(mode="after")
    def _format_says_signed(self) -> _Slot:
        if (self.format == SIGNED_ANCHOR_FORMAT) != self.signed:
            raise ValueError(f"format {self.format} and the presence of a signature disagree")
        return self


GENESIS_ANCHOR = Anchor(seq=0, hash=GENESIS_HASH)


def _slot_check(
    seq: int, digest: str, first_hash: str | None, key_id: str | None = None, signature: str | None = None
) -> str:
    # The SHA-256 of the RFC 8785 form of the slot's other members (ASCII keys in order, hex and base64url
    # strings, an integer: a format string spells it exactly). It tells a torn or garbled slot from a whole
    # one; it is not a secret, so it proves nothing about who wrote the slot (the signature does that).
    first = "null" if first_hash is None else f'"{first_hash}"'
    if signature is None:
        canonical = (
            f'{{"first_hash":{first},"format":"{ANCHOR_FORMAT}","genesis":"{GENESIS_HASH}",'
            f'"hash":"{digest}","seq":{seq}}}'
        )
    else:
        canonical = (
            f'{{"first_hash":{first},"format":"{SIGNED_ANCHOR_FORMAT}","genesis":"{GENESIS_HASH}",'
            f'"hash":"{digest}","key_id":"{key_id}","seq":{seq},"signature":"{signature}"}}'
        )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def anchor_slot(
    seq: int, digest: str, first_hash: str | None, key_id: str | None = None, signature: str | None = None
) -> bytes:
    """One slot naming entry ``seq`` (hash ``digest``) and the first entry's hash, padded to the slot size;
    with ``key_id`` and ``signature`` it is a signed checkpoint."""
    first = "null" if first_hash is None else f'"{first_hash}"'
    check = _slot_check(seq, digest, first_hash, key_id, signature)
    if signature is None:
        text = (
            f'{{"format":"{ANCHOR_FORMAT}","genesis":"{GENESIS_HASH}","first_hash":{first},"seq":{seq},'
            f'"hash":"{digest}","check":"{check}"}}'
        ).encode("ascii")
    else:
        text = (
            f'{{"format":"{SIGNED_ANCHOR_FORMAT}","genesis":"{GENESIS_HASH}","first_hash":{first},"seq":{seq},'
            f'"hash":"{digest}","key_id":"{key_id}","signature":"{signature}","check":"{check}"}}'
        ).encode("ascii")
    return text.ljust(ANCHOR_SLOT_SIZE - 1) + b"\n"


def anchor_file_bytes(anchor: Anchor) -> bytes:
    """A whole anchor file with both slots naming ``anchor``."""
    slot = anchor_slot(anchor.seq, anchor.hash, anchor.first_hash, anchor.key_id, anchor.signature)
    return slot * ANCHOR_SLOTS


class AnchorUnreadable(AuditError):
    """The anchor file exists but is not a valid anchor; the message says what is wrong with it."""


@dataclass(frozen=True)
class AnchorFile:
    """What an anchor file says: the anchor, the slot holding it, and what was wrong with the other slot."""

    anchor: Anchor
    #: the slot an append must not overwrite (its next anchor goes to the other one)
    newest_slot: int
    #: why the other slot was not used (a write cut off by a crash, or an edit), None when it was fine
    damaged_slot: str | None = None
    #: a single-document anchor from an earlier version
    legacy: bool = False
    #: the file's bytes as read
    raw: bytes = b""


def open_anchor(path: Path, flags: int) -> int:
    """A descriptor on the anchor file (``FileNotFoundError`` when absent; ``AnchorUnreadable`` if not a file)."""
    return open_regular_file(path, flags, AnchorUnreadable, "the head anchor")


def open_regular_file(path: Path, flags: int, refusal: _Refusal, role: str) -> int:
    """A descriptor on ``path``, a regular file (``FileNotFoundError`` when absent). ``refusal(message)`` is
    raised, the message naming the file by its ``role``, when it cannot be opened or is something else (a FIFO,
    a device, a directory)."""
    # O_NOFOLLOW: a symlink planted at an audit file's path must not make appends overwrite another file, nor
    # make verification trust one; O_NONBLOCK: a FIFO planted there must not hang the open.
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise refusal(f"cannot open {role} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise refusal(f"{path} is not a regular file, so it cannot be {role}")
    return fd


def read_anchor_fd(fd: int, path: Path) -> AnchorFile:
    return parse_anchor(os.pread(fd, _ANCHOR_READ_LIMIT, 0), path)


def read_anchor(path: Path) -> AnchorFile | None:
    """The anchor at ``path``, None when there is none; ``AnchorUnreadable`` when it is damaged."""
    return read_regular_file(path, AnchorUnreadable, "the head anchor", read_anchor_fd)


def read_regular_file(path: Path, refusal: _Refusal, role: str, read: Callable[[int, Path], _T]) -> _T | None:
    """``read(fd, path)`` of the regular file at ``path`` opened read-only (see ``open_regular_file``), None
    when there is no file; the descriptor is closed again either way."""
    try:
        fd = open_regular_file(path, os.O_RDONLY, refusal, role)
    except FileNotFoundError:
        return None
    try:
        return read(fd, path)
    finally:
        os.close(fd)


def parse_anchor(raw: bytes, path: Path) -> AnchorFile:
    """Both slots read; the valid one with the higher seq wins, so a torn newer slot falls back to the older."""
    if len(raw) != ANCHOR_FILE_SIZE:
        return _parse_legacy_anchor(raw, path)
    slots: list[Anchor | None] = []
    reasons: list[str] = []
    for index in range(ANCHOR_SLOTS):
        slot, reason = _parse_slot(raw[index * ANCHOR_SLOT_SIZE : (index + 1) * ANCHOR_SLOT_SIZE])
        slots.append(slot)
        reasons.append(f"slot {index}: {reason}" if reason else "")
    valid = [(slot.seq, -index, index) for index, slot in enumerate(slots) if slot is not None]
    if not valid:
        raise AnchorUnreadable(f"{path} is not a valid head anchor ({'; '.join(reasons)})")
    newest = max(valid)[2]
    anchor = slots[newest]
    assert anchor is not None
    other = slots[1 - newest]
    if other is not None:
        if other.seq == anchor.seq and other.hash != anchor.hash:
            raise AnchorUnreadable(
                f"{path} is not a valid head anchor (its two slots name different records as seq {anchor.seq})"
            )
        if other.first_hash is not None and other.first_hash != anchor.first_hash:
            raise AnchorUnreadable(
                f"{path} is not a valid head anchor (its two slots name different first records)"
            )
    return AnchorFile(anchor=anchor, newest_slot=newest, damaged_slot=reasons[1 - newest] or None, raw=raw)


def _parse_slot(raw: bytes) -> tuple[Anchor | None, str]:
    if not raw.endswith(b"\n"):
        return None, "it does not end with its newline (a cut-off write)"
    try:
        slot = _Slot.model_validate_json(raw.rstrip(b" \n"))
    except ValidationError as error:
        return None, _first_error(error)
    if slot.check != _slot_check(slot.seq, slot.hash, slot.first_hash, slot.key_id, slot.signature):
        return None, "its check does not match its content (a cut-off write, or an edit)"
    return Anchor.model_validate(slot, from_attributes=True), ""


def _parse_legacy_anchor(raw: bytes, path: Path) -> AnchorFile:
    try:
        legacy = _LegacyAnchor.model_validate_json(raw)
    except ValidationError as error:
        if _names_legacy_format(raw):
            raise AnchorUnreadable(f"{path} is not a valid head anchor ({_first_error(error)})") from None
        raise AnchorUnreadable(
            f"{path} is not a valid head anchor (it holds {len(raw)} bytes; an anchor is {ANCHOR_SLOTS} slots "
            f"of {ANCHOR_SLOT_SIZE} bytes)"
        ) from None
    anchor = Anchor(genesis=legacy.genesis, first_hash=legacy.first_hash, seq=legacy.seq, hash=legacy.hash)
    return AnchorFile(anchor=anchor, newest_slot=0, legacy=True, raw=raw)


def _names_legacy_format(raw: bytes) -> bool:
    try:
        document = json.loads(raw)
    except ValueError:
        return False
    return isinstance(document, dict) and document.get("format") == LEGACY_ANCHOR_FORMAT


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the content"
    return f"{where}: {first['msg']}"
