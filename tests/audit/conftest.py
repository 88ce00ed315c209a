"""Fixtures for the audit tests: real records, real logs, and the edits an attacker with file access would make."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from seepient.audit import AuditLog, AuditOutcome, AuditRecord
from seepient.protocol import (
    ApprovalResponse,
    FileChange,
    PreparedActionDraft,
    ShellCommand,
    SimpleCommand,
    Verdict,
)


def make_record(index: int, *, content_size: int = 0, session: str = "sess_audit") -> AuditRecord:
    """A record that exercises every part of the schema; ``content_size`` makes a large file-change payload."""
    if content_size:
        payload: Any = FileChange(
            path=f"big_{index}.txt", pre_image_sha256=None, new_content="x" * content_size
        )
        kind, tool = "file_change", "write_file"
    else:
        payload = ShellCommand(
            command=f"echo run-{index} > out_{index}.txt",
            commands=(SimpleCommand(argv=("echo", f"run-{index}"), binary="echo"),),
            capabilities=("write_workspace",),
            cwd="/workspace",
        )
        kind, tool = "shell", "shell"
    action = PreparedActionDraft(
        session_id=session,
        call_id=f"call_{index}",
        tool=tool,
        kind=kind,
        payload=payload,
        read_only=False,
        summary=f"action {index} — é ✓",
    )
    approval = ApprovalResponse(decision="approve_once", digest=action.digest) if index % 3 else None
    verdict = (
        Verdict.ask("mode:ask", "writes the workspace") if approval else Verdict.allow("allow:Bash(echo *)")
    )
    return AuditRecord(
        surface="cli",
        session_id=session,
        model="replay:script.yaml",
        action=action,
        verdict=verdict,
        approval=approval,
        outcome=AuditOutcome.with_output("ok", f"run-{index}\n", exit_code=0, detail=f"record {index}"),
    )


class LogFile:
    """A log on disk plus the raw edits an attacker could make to it and its anchor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.anchor = path.with_name(path.name + ".anchor")

    def lines(self) -> list[bytes]:
        return self.path.read_bytes().splitlines(keepends=True)

    def write_lines(self, lines: list[bytes]) -> None:
        self.path.write_bytes(b"".join(lines))

    def entry(self, seq: int) -> dict[str, Any]:
        return json.loads(self.lines()[seq - 1])

    def set_entry(self, seq: int, entry: dict[str, Any], *, rehash: bool) -> dict[str, Any]:
        """Replace line ``seq``; with ``rehash`` recompute its hash as a careful attacker would (RFC 8785)."""
        if rehash:
            entry = {**entry, "hash": attacker_hash(entry)}
        lines = self.lines()
        lines[seq - 1] = json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        self.write_lines(lines)
        return entry

    @staticmethod
    def rehash(entry: dict[str, Any]) -> str:
        return attacker_hash(entry)

    def anchor_slots(self) -> list[dict[str, Any] | None]:
        """Both anchor slots as an independent reader sees them (None where the check fails)."""
        return read_anchor_slots(self.anchor.read_bytes())

    def anchor_json(self) -> dict[str, Any]:
        """The anchor a reader trusts: the checked slot with the higher seq, without its check."""
        valid = [slot for slot in self.anchor_slots() if slot is not None]
        assert valid, "no anchor slot passes its check"
        return max(valid, key=lambda slot: slot["seq"])

    def write_anchor(self, anchor: dict[str, Any]) -> None:
        """Rewrite the anchor as a careful attacker would: both slots, with checks that match."""
        self.write_anchor_slots(anchor, anchor)

    def write_anchor_slots(self, first: dict[str, Any], second: dict[str, Any]) -> None:
        self.anchor.write_bytes(anchor_slot_bytes(first) + anchor_slot_bytes(second))


def attacker_hash(entry: dict[str, Any]) -> str:
    """The entry hash computed from the published rule, independently of Seepient's code."""
    return hashlib.sha256(rfc8785.dumps({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


ANCHOR_SLOT_SIZE = 512
ANCHOR_MEMBERS = ("format", "genesis", "first_hash", "seq", "hash")


def anchor_slot_bytes(anchor: dict[str, Any]) -> bytes:
    """One anchor slot from the published format: the members, a SHA-256 check over their RFC 8785 form,
    padded with spaces to 511 bytes and a newline."""
    members = {"format": "seepient-audit-anchor/2", **{k: v for k, v in anchor.items() if k != "check"}}
    members = {key: members[key] for key in ANCHOR_MEMBERS}
    check = hashlib.sha256(rfc8785.dumps(members)).hexdigest()
    text = json.dumps({**members, "check": check}, separators=(",", ":")).encode()
    assert len(text) < ANCHOR_SLOT_SIZE
    return text.ljust(ANCHOR_SLOT_SIZE - 1) + b"\n"


def read_anchor_slots(raw: bytes) -> list[dict[str, Any] | None]:
    assert len(raw) == 2 * ANCHOR_SLOT_SIZE, f"an anchor file is two 512-byte slots, not {len(raw)} bytes"
    slots: list[dict[str, Any] | None] = []
    for index in range(2):
        try:
            slot = json.loads(raw[index * ANCHOR_SLOT_SIZE : (index + 1) * ANCHOR_SLOT_SIZE])
            members = {k: v for k, v in slot.items() if k != "check"}
            whole = hashlib.sha256(rfc8785.dumps(members)).hexdigest() == slot["check"]
        except (ValueError, KeyError, AttributeError):
            whole = False
        slots.append(members if whole else None)
    return slots


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "seepient-home" / "audit.log"


@pytest.fixture
def filled_log(log_path: Path) -> Callable[[int], LogFile]:
    def _fill(count: int) -> LogFile:
        log = AuditLog(log_path)
        for index in range(1, count + 1):
            log.append(make_record(index))
        return LogFile(log_path)

    return _fill


@pytest.fixture
def log_file() -> Callable[[Path], LogFile]:
    return LogFile


@pytest.fixture
def record_factory() -> Callable[..., AuditRecord]:
    return make_record


SIGNED_ANCHOR_MEMBERS = ("format", "genesis", "first_hash", "seq", "hash", "key_id", "signature")


def attacker_key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]


def signed_anchor_slot(anchor: dict[str, Any], private_key: Any, *, key_id: str | None = None) -> bytes:
    """A signed (format 3) slot built from the published format alone: the checkpoint message is the RFC 8785
    JSON of first_hash, hash, seq and type, signed with ``private_key`` (an attacker's, unless stolen)."""
    import base64

    message = rfc8785.dumps(
        {
            "first_hash": anchor["first_hash"],
            "hash": anchor["hash"],
            "seq": anchor["seq"],
            "type": "seepient-audit-checkpoint",
        }
    )
    signature = base64.urlsafe_b64encode(private_key.sign(message)).rstrip(b"=").decode()
    members = {
        "format": "seepient-audit-anchor/3",
        "genesis": "0" * 64,
        "first_hash": anchor["first_hash"],
        "seq": anchor["seq"],
        "hash": anchor["hash"],
        "key_id": key_id or attacker_key_id(private_key.public_key()),
        "signature": signature,
    }
    check = hashlib.sha256(rfc8785.dumps(members)).hexdigest()
    text = json.dumps({**members, "check": check}, separators=(",", ":")).encode()
    assert len(text) < ANCHOR_SLOT_SIZE
    return text.ljust(ANCHOR_SLOT_SIZE - 1) + b"\n"


class SignedLog(LogFile):
    """A log written with a signing key, as a session writes it, and the paths verification needs."""

    def __init__(self, path: Path, key: Path, witness: Path | None) -> None:
        super().__init__(path)
        self.key = key
        self.public_key = key.with_suffix(".pub")
        self.witness = witness

    def writer(self) -> AuditLog:
        from seepient.audit.signing import CheckpointSigner

        return AuditLog(self.path, signer=CheckpointSigner(self.key), witness_path=self.witness)

    def verify(self, *, witness: bool = True) -> Any:
        from seepient.audit import verify_log

        return verify_log(self.path, public_key=self.public_key, witness=self.witness if witness else None)

    def rewrite_consistently(self, lines: list[bytes]) -> list[dict[str, Any]]:
        """Rehash and rechain ``lines`` from genesis as a careful attacker would; returns the new entries."""
        prev, entries = "0" * 64, []
        for seq, raw in enumerate(lines, start=1):
            entry = {k: v for k, v in json.loads(raw).items() if k != "hash"}
            entry = {"seq": seq, "prev": prev, **{k: v for k, v in entry.items() if k not in ("seq", "prev")}}
            entry["hash"] = attacker_hash(entry)
            prev = entry["hash"]
            entries.append(entry)
        self.write_lines(
            [json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for e in entries]
        )
        return entries


@pytest.fixture
def signed_log(tmp_path: Path) -> Callable[..., SignedLog]:
    def _fill(count: int, *, witness: bool = False) -> SignedLog:
        log = SignedLog(
            tmp_path / "seepient-home" / "audit.log",
            tmp_path / "seepient-home" / "keys" / "audit-signing.key",
            tmp_path / "other-volume" / "audit.witness" if witness else None,
        )
        if log.witness is not None:
            log.witness.parent.mkdir(parents=True, exist_ok=True)
        writer = log.writer()
        for index in range(1, count + 1):
            writer.append(make_record(index))
        writer.close()
        return log

    return _fill
