"""What a check finds before the rules and the mode speak: denials, asks no mode may skip, and concerns the
consent mode weighs; and the names of the built-in findings, ranked so a verdict names the most specific."""

from __future__ import annotations

from dataclasses import dataclass, field

from seepient.policy.paths import RULE_FOREIGN, RULE_OUTSIDE, RULE_SELF, RULE_SENSITIVE
from seepient.protocol import Verdict

RULE_UNPARSED = "shell:unparsed"
RULE_UNVERIFIABLE = "shell:unverifiable_path"
RULE_DANGEROUS = "shell:dangerous"
RULE_PRIVILEGED = "shell:privileged"
RULE_CONTAINS_SENSITIVE = "path_guard:contains_sensitive"
RULE_CONTAINS_DENIED = "path_rule:contains_denied"

_SPECIFICITY = {
    RULE_SELF: 0,
    RULE_SENSITIVE: 1,
    RULE_FOREIGN: 1.5,
    RULE_DANGEROUS: 2,
    RULE_PRIVILEGED: 2.5,
    RULE_OUTSIDE: 3,
    RULE_UNPARSED: 4,
    RULE_UNVERIFIABLE: 5,
    RULE_CONTAINS_SENSITIVE: 6,
    RULE_CONTAINS_DENIED: 7,
}
# Among asks, a line that could not be analysed is named before the danger found in what could be.
_ASK_SPECIFICITY = {**_SPECIFICITY, RULE_DANGEROUS: 4.5}


@dataclass
class Findings:
    """What the action's own check found: denials win, then asks no mode may skip; concerns go to the mode."""

    denials: list[tuple[str, str]] = field(default_factory=list)
    hard_asks: list[tuple[str, str]] = field(default_factory=list)
    concerns: list[str] = field(default_factory=list)

    def deny(self, rule: str, reason: str) -> None:
        self.denials.append((rule, reason))

    def ask(self, rule: str, reason: str) -> None:
        self.hard_asks.append((rule, reason))

    def concern(self, reason: str) -> None:
        if reason not in self.concerns:
            self.concerns.append(reason)

    def verdict(self) -> Verdict | None:
        for found, make, rank in (
            (self.denials, Verdict.deny, _SPECIFICITY),
            (self.hard_asks, Verdict.ask, _ASK_SPECIFICITY),
        ):
            if found:
                # Name the most specific finding: touching Seepient's state or a secret says more than
                # "outside the workspace", which says more than a malformed path.
                ordered = sorted(found, key=lambda item: rank.get(item[0], len(rank)))
                reasons = tuple(dict.fromkeys(reason for _, reason in ordered))
                return make(ordered[0][0], *reasons)
        return None
