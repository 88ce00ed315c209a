"""Headless runs: keep each action refused because it needed approval and no one could answer, so the run can
say which rule asked and why, and end with its own exit code (``exit_codes.REFUSED``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TextIO

from seepient.protocol import PermissionRequest, PermissionResolved, RuntimeEvent, SubagentEvent
from seepient.surfaces.cli.render import call_label


@dataclass(frozen=True)
class Refusal:
    action: str
    """The action in a few words (its tool and what it touches)."""
    rule: str | None
    reasons: tuple[str, ...]


class RefusalLog:
    """An event listener: each ``permission_request`` answered ``headless`` becomes a ``Refusal``, a
    sub-agent's included."""

    def __init__(self) -> None:
        self._asked: dict[str, dict[str, Any]] = {}
        self.refused: list[Refusal] = []

    def __call__(self, event: RuntimeEvent) -> None:
        if isinstance(event, PermissionRequest | PermissionResolved):
            self._follow(event.model_dump(mode="json"))
        elif isinstance(event, SubagentEvent):
            inner = event.event
            while inner.get("type") == "subagent_event":
                inner = inner.get("event", {})
            self._follow(inner)

    def _follow(self, event: dict[str, Any]) -> None:
        if event.get("type") == "permission_request":
            request = event.get("request", {})
            self._asked[str(request.get("request_id"))] = request
        elif event.get("type") == "permission_resolved":
            request = self._asked.pop(str(event.get("request_id")), None)
            if request is None or event.get("response", {}).get("approved_by") != "headless":
                return
            action, verdict = request.get("action", {}), request.get("verdict", {})
            arguments = _naming_arguments(action)
            self.refused.append(
                Refusal(
                    action=call_label(str(action.get("tool")), arguments),
                    rule=verdict.get("rule"),
                    reasons=tuple(verdict.get("reasons") or ()),
                )
            )

    def report(self, err: TextIO) -> None:
        """Per refused action, the rule that asked and why; then what to do about it."""
        if not self.refused:
            return
        count = len(self.refused)
        err.write(
            f"seepient: {count} action{'s' if count != 1 else ''} refused: "
            f"{'they need' if count != 1 else 'it needs'} approval and no one can answer here\n"
        )
        for refusal in self.refused:
            why = "; ".join(refusal.reasons) or "no reason given"
            err.write(f"  - {refusal.action}: policy asked ({refusal.rule or 'no rule named'}): {why}\n")
        err.write(
            "  rerun with -y to approve what policy asks about, or add allow rules to the settings "
            "(`seepient policy explain` shows which rule decides)\n"
        )
        err.flush()


def _naming_arguments(action: dict[str, Any]) -> dict[str, object]:
    """The payload fields that say what an action touches, in the shape ``call_label`` reads."""
    payload = action.get("payload") or {}
    if isinstance(payload, dict):
        named = {k: v for k, v in payload.items() if k in ("path", "command", "url") and isinstance(v, str)}
        if named:
            return named
    return {"summary": action.get("summary", "")}
