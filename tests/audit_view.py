"""The audit log as tests read it per action: an intent and its outcome merged into one entry shaped like a
single ``action`` record (with ``intent_seq``/``outcome_seq``), other records as they are."""

from __future__ import annotations

from typing import Any


def merge_actions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per action, in intent order; an intent without an outcome gets ``"outcome": None``."""
    merged: list[dict[str, Any]] = []
    by_action: dict[str, dict[str, Any]] = {}
    for record in records:
        kind = record.get("type")
        if kind == "intent":
            entry = {**record, "type": "action", "intent_seq": record.get("seq"), "outcome": None}
            by_action[record["action"]["id"]] = entry
            merged.append(entry)
        elif kind == "outcome":
            entry = by_action[record["action_id"]]
            assert entry["outcome"] is None, f"a second outcome for {record['action_id']}"
            assert entry["action"]["digest"] == record["digest"]
            entry["outcome"] = record["outcome"]
            entry["outcome_seq"] = record.get("seq")
        else:
            merged.append(record)
    return merged
