"""The audit log read for people and SIEMs: one entry per action (an intent and its outcome joined), flattened
to the fields a reader filters on. Reading never changes the log; ``audit verify`` is what checks it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class UnreadableLine:
    line: int
    problem: str


def read_actions(
    path: Path, *, session_id: str | None = None
) -> tuple[list[dict[str, Any]], list[UnreadableLine]]:
    """The actions of the log at ``path`` in the order they were first recorded, each a flat ``dict``
    (``action_entry``), other records (a worker dispatch, a state change) flattened the same way; and the lines
    that are not JSON records. An intent whose outcome never came has ``status: "interrupted"``."""
    entries: list[dict[str, Any]] = []
    unreadable: list[UnreadableLine] = []
    waiting: dict[str, dict[str, Any]] = {}
    with path.open("rb") as log:
        for number, raw in enumerate(log, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError as exc:
                unreadable.append(UnreadableLine(number, f"not JSON ({exc})"))
                continue
            if not isinstance(record, dict):
                unreadable.append(UnreadableLine(number, "not a JSON object"))
                continue
            if session_id is not None and record.get("session_id") != session_id:
                continue
            if record.get("type") == "outcome":
                entry = waiting.pop(str(record.get("action_id")), None)
                if entry is not None:
                    _set_outcome(entry, record.get("outcome") or {}, record.get("seq"))
                continue
            entry = action_entry(record)
            if record.get("type") == "intent":
                entry["status"] = "interrupted"
                waiting[str(entry.get("action_id"))] = entry
            entries.append(entry)
    return entries, unreadable


def action_entry(record: dict[str, Any]) -> dict[str, Any]:
    """A record flattened: when, who, where, what (tool, kind, summary, digest), the verdict, the approval and,
    for a one-record action, its outcome."""
    action = record.get("action") if isinstance(record.get("action"), dict) else {}
    verdict = record.get("verdict") if isinstance(record.get("verdict"), dict) else {}
    approval = record.get("approval") if isinstance(record.get("approval"), dict) else {}
    entry: dict[str, Any] = {
        "seq": record.get("seq"),
        "timestamp": record.get("timestamp"),
        "type": "action" if record.get("type") in ("intent", "action") else record.get("type"),
        "session_id": record.get("session_id"),
        "principal": record.get("principal"),
        "surface": record.get("surface"),
        "model": record.get("model"),
        "action_id": action.get("id"),
        "tool": action.get("tool"),
        "kind": action.get("kind"),
        "summary": action.get("summary"),
        "digest": action.get("digest"),
        "decision": verdict.get("decision"),
        "rule": verdict.get("rule"),
        "reasons": list(verdict.get("reasons") or ()),
        "approval": approval.get("decision"),
        "approved_by": approval.get("approved_by"),
        "status": None,
        "exit_code": None,
        "detail": None,
    }
    if record.get("parent_session_id"):
        entry["parent_session_id"] = record["parent_session_id"]
    if isinstance(record.get("outcome"), dict):
        _set_outcome(entry, record["outcome"], None)
    return entry


def _set_outcome(entry: dict[str, Any], outcome: dict[str, Any], seq: Any) -> None:
    entry["status"] = outcome.get("status")
    entry["exit_code"] = outcome.get("exit_code")
    entry["detail"] = outcome.get("detail")
    if seq is not None:
        entry["outcome_seq"] = seq
