"""Reading the audit log back per action: an intent and its outcome joined, an intent with no outcome shown as
interrupted, a one-record action as it is, the session filter, and a damaged line named rather than fatal."""

from __future__ import annotations

import json
from pathlib import Path

from seepient.audit.view import read_actions


def _action(action_id: str, session: str, tool: str = "shell") -> dict:
    return {
        "id": action_id,
        "session_id": session,
        "tool": tool,
        "kind": "shell",
        "summary": f"{tool} {action_id}",
        "digest": "d" * 64,
    }


def _log(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "audit.log"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_intents_join_their_outcomes_and_a_missing_outcome_reads_as_interrupted(tmp_path: Path) -> None:
    verdict = {"decision": "ask", "rule": "mode:always-ask", "reasons": ["it runs make"]}
    approval = {"decision": "approve_once", "approved_by": "user"}
    path = _log(
        tmp_path,
        [
            {
                "seq": 1,
                "type": "intent",
                "session_id": "s1",
                "action": _action("a1", "s1"),
                "verdict": verdict,
                "approval": approval,
            },
            {
                "seq": 2,
                "type": "action",
                "session_id": "s2",
                "action": _action("a2", "s2", "write_file"),
                "verdict": verdict,
                "approval": {"decision": "reject", "approved_by": "headless"},
                "outcome": {"status": "rejected", "detail": "no one to ask"},
            },
            {
                "seq": 3,
                "type": "intent",
                "session_id": "s1",
                "action": _action("a3", "s1"),
                "verdict": verdict,
            },
            {
                "seq": 4,
                "type": "outcome",
                "session_id": "s1",
                "action_id": "a1",
                "outcome": {"status": "ok", "exit_code": 0},
            },
            "{not json",
        ],
    )
    entries, unreadable = read_actions(path)
    assert [(e["action_id"], e["status"]) for e in entries] == [
        ("a1", "ok"),
        ("a2", "rejected"),
        ("a3", "interrupted"),
    ]
    assert entries[0]["exit_code"] == 0 and entries[0]["outcome_seq"] == 4
    assert entries[0]["rule"] == "mode:always-ask" and entries[0]["approved_by"] == "user"
    assert entries[1]["approved_by"] == "headless" and entries[1]["detail"] == "no one to ask"
    assert [u.line for u in unreadable] == [5]
    only, _ = read_actions(path, session_id="s2")
    assert [e["action_id"] for e in only] == ["a2"]
