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

    def anchor_json(self) -> dict[str, Any]:
        return json.loads(self.anchor.read_bytes())

    def write_anchor(self, anchor: dict[str, Any]) -> None:
        self.anchor.write_text(json.dumps(anchor))


def attacker_hash(entry: dict[str, Any]) -> str:
    """The entry hash computed from the published rule, independently of Seepient's code."""
    return hashlib.sha256(rfc8785.dumps({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


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
def record_factory() -> Callable[..., AuditRecord]:
    return make_record
