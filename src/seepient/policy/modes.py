"""Consent modes: the last step of policy, deciding what no rule and no check has decided.

- ``always-ask``: reads inside the workspace proceed; everything else asks.
- ``ask-untrusted`` (default, alias ``on-request``): reads inside the workspace and shell lines made only
  of known-safe read-only commands (or commands an allow rule covers) that stay inside the workspace
  proceed; everything else asks.
- ``auto``: like ``ask-untrusted``, and changes to files inside the workspace proceed too; what would still
  ask goes to the auto-mode classifier (``policy/classifier.py``) before a person.
- ``autonomous-trusted`` (alias ``bypass``): whatever would ask proceeds. Deny rules, the path guard,
  self-protection and the asks that no mode may skip (a line that could not be analysed, a path that
  cannot be checked before it runs) were already applied before the mode is consulted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from seepient.config.settings import normalise_mode
from seepient.protocol import Verdict

ALWAYS_ASK = "always-ask"
ASK_UNTRUSTED = "ask-untrusted"
AUTO = "auto"
AUTONOMOUS_TRUSTED = "autonomous-trusted"
DEFAULT_MODE = ASK_UNTRUSTED
MODE_ORDER = (ALWAYS_ASK, ASK_UNTRUSTED, AUTO, AUTONOMOUS_TRUSTED)
"""Consent modes from strictest to loosest. ``auto`` sits between ``ask-untrusted`` and
``autonomous-trusted``: it lets workspace edits through and lets a classifier answer asks a person would get
under ``ask-untrusted``, but it still asks where ``autonomous-trusted`` proceeds."""


@dataclass
class ModeSubject:
    """What the mode needs to know about an action that reached it."""

    kind: Literal["read", "file_change", "shell", "fetch", "other"]
    inside_workspace: bool
    known_safe: bool = False
    concerns: list[str] = field(default_factory=list)
    description: str = ""


def resolve_mode(mode: str) -> str:
    """The canonical mode name; raises ``SettingsError`` naming the valid modes for anything else."""
    return normalise_mode(mode)


def decide(mode: str, subject: ModeSubject) -> Verdict:
    rule = f"mode:{mode}"
    reads_inside = subject.kind == "read" and subject.inside_workspace
    if mode == AUTONOMOUS_TRUSTED:
        return Verdict.allow(rule, *subject.concerns, f"{mode} proceeds without asking")
    if reads_inside:
        return Verdict.allow(rule, f"{subject.description or 'a read'} inside the workspace")
    if mode == AUTO and subject.kind == "file_change" and subject.inside_workspace:
        return Verdict.allow(rule, "auto mode proceeds with changes inside the workspace")
    untrusted = mode in (ASK_UNTRUSTED, AUTO)
    if untrusted and subject.kind == "shell" and subject.known_safe and subject.inside_workspace:
        return Verdict.allow(rule, "every command is a known-safe read-only command inside the workspace")
    reasons = list(subject.concerns)
    if subject.kind == "read":
        reasons.append("it reads outside the workspace")
    elif subject.kind == "shell" and subject.known_safe and not subject.inside_workspace:
        reasons.append("it reads outside the workspace")
    elif subject.kind == "shell" and untrusted:
        reasons.append("not every command is a known-safe read-only command")
    if mode == ALWAYS_ASK:
        reasons.append("always-ask asks before anything but a read inside the workspace")
    elif not reasons:
        reasons.append(f"{mode} asks before actions that change something")
    return Verdict.ask(rule, *reasons)
