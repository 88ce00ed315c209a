"""The check of reads (read_file, glob, grep, lsp, notebooks): deny rules on the path as written and as it
resolves, the path guard, what a recursive glob or grep would reach below its root, then ask and allow rules
and the consent mode."""

from __future__ import annotations

from seepient.policy.checks.decider import Decider
from seepient.policy.checks.findings import RULE_CONTAINS_DENIED, RULE_CONTAINS_SENSITIVE, Findings
from seepient.policy.modes import ModeSubject
from seepient.policy.paths import RULE_INVALID
from seepient.policy.rules import Rule
from seepient.protocol import PathDenied, PreparedActionDraft, ReadAction, ResolvedPath, Verdict

_FAMILIES = ("Read",)


def check_read(decider: Decider, action: PreparedActionDraft, read: ReadAction) -> Verdict:
    rules = decider.rules
    if not read.paths:
        return Verdict.deny(RULE_INVALID, "the read names no path")
    spellings = [s for p in read.paths for s in decider.spellings(p)]
    hit = decider.path_rule_hit(rules.deny, action, _FAMILIES, spellings, lenient=True)
    if hit is not None:
        return Verdict.deny(
            f"deny:{hit.text}", f"a deny rule ({hit.source}) forbids reading {', '.join(read.paths)}"
        )
    findings = Findings()
    resolved: list[ResolvedPath] = []
    for path in read.paths:
        try:
            resolved.append(decider.guard.for_read(path))
        except PathDenied as denied:
            findings.deny(denied.rule, denied.reason)
    asked_below: Rule | None = None
    if read.operation in ("glob", "grep"):
        for item in resolved:
            below = decider.guard.sensitive_below(item.absolute)
            if below:
                findings.ask(
                    RULE_CONTAINS_SENSITIVE, f"a recursive {read.operation} there would reach it: {below}"
                )
    if read.operation == "grep":
        asked_below = _grep_below(decider, action, read, resolved, findings)
    decided = findings.verdict()
    if decided is not None:
        return decided
    absolutes = [r.absolute for r in resolved]
    hit = decider.path_rule_hit(rules.ask, action, _FAMILIES, absolutes, lenient=True) or asked_below
    if hit is not None:
        return Verdict.ask(f"ask:{hit.text}", f"an ask rule ({hit.source}) covers this read")
    if decider.all_covered(rules.allow, action, _FAMILIES, absolutes):
        rule = decider.first_cover(rules.allow, action, _FAMILIES, absolutes)
        return Verdict.allow(f"allow:{rule.text}", f"an allow rule ({rule.source}) covers this read")
    # The user's own skills count as trusted reads, like the workspace (PathGuard.is_user_instruction).
    inside = all(r.relative is not None or decider.guard.is_user_instruction(r.absolute) for r in resolved)
    locked = decider.locked(
        lambda r: r.bare or all(decider.matches(r, p, lenient=False) for p in absolutes), action, _FAMILIES
    )
    return decider.decide(
        ModeSubject("read", inside, description=f"{read.operation} of {', '.join(read.paths)}"), locked
    )


def _grep_below(
    decider: Decider,
    action: PreparedActionDraft,
    read: ReadAction,
    resolved: list[ResolvedPath],
    findings: Findings,
) -> Rule | None:
    """grep opens every file below its root: files a deny rule protects must not be among them. Returns the
    first ask rule naming a file below, which asks unless a finding decides first."""
    file_glob = read.params.get("glob") if isinstance(read.params.get("glob"), str) else None
    asked_below: Rule | None = None
    for item in resolved:
        for rule in decider.path_rules(decider.rules.deny, action, _FAMILIES):
            if decider.below(rule, item.absolute, file_glob):
                findings.ask(
                    RULE_CONTAINS_DENIED,
                    f"the grep would search files a deny rule ({rule.source}: {rule.text}) protects below "
                    f"{item.absolute}; narrow it with a path or a glob that leaves them out",
                )
                break
        for rule in decider.path_rules(decider.rules.ask, action, _FAMILIES):
            if asked_below is None and decider.below(rule, item.absolute, file_glob):
                asked_below = rule
    return asked_below
