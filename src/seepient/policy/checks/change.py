"""The check of file changes (edit_file, write_file, apply_patch): deny rules on the path as written and as
it resolves, the path guard's write check, ask and allow rules, then the consent mode; a change set is judged
path by path and its strictest verdict speaks for it."""

from __future__ import annotations

from seepient.policy.checks.decider import Decider
from seepient.policy.modes import ModeSubject
from seepient.policy.paths import RULE_INVALID
from seepient.protocol import Decision, FileChange, FileChangeSet, PathDenied, PreparedActionDraft, Verdict


def check_change(decider: Decider, action: PreparedActionDraft, change: FileChange) -> Verdict:
    rules = decider.rules
    families = ("Edit", "Write") if change.new_content is not None or change.delete else ("Edit",)
    spellings = decider.spellings(change.path)
    hit = decider.path_rule_hit(rules.deny, action, families, spellings, lenient=True)
    if hit is not None:
        return Verdict.deny(f"deny:{hit.text}", f"a deny rule ({hit.source}) forbids changing {change.path}")
    try:
        resolved = decider.guard.for_write(change.path)
    except PathDenied as denied:
        return Verdict.deny(denied.rule, denied.reason)
    hit = decider.path_rule_hit(rules.ask, action, families, [resolved.absolute], lenient=True)
    if hit is not None:
        return Verdict.ask(f"ask:{hit.text}", f"an ask rule ({hit.source}) covers changes to {change.path}")
    if decider.all_covered(rules.allow, action, families, [resolved.absolute]):
        rule = decider.first_cover(rules.allow, action, families, [resolved.absolute])
        return Verdict.allow(
            f"allow:{rule.text}", f"an allow rule ({rule.source}) covers changes to {change.path}"
        )
    verb = "deletes" if change.delete else "creates" if change.pre_image_sha256 is None else "changes"
    locked = decider.locked(
        lambda r: r.bare or decider.matches(r, resolved.absolute, lenient=False), action, families
    )
    return decider.decide(
        ModeSubject("file_change", True, concerns=[f"it {verb} {resolved.relative}"]), locked
    )


def check_change_set(decider: Decider, action: PreparedActionDraft, change_set: FileChangeSet) -> Verdict:
    """Every path of the set is judged as its own change; the strictest verdict speaks for the set."""
    verdicts = [check_change(decider, action, change) for change in change_set.changes]
    for decision in (Decision.DENY, Decision.ASK, Decision.ALLOW):
        decided = [v for v in verdicts if v.decision is decision]
        if decided:
            reasons = dict.fromkeys(reason for v in decided for reason in v.reasons)
            return Verdict(decision=decision, rule=decided[0].rule, reasons=tuple(reasons))
    return Verdict.deny(RULE_INVALID, "the change set names no file")
