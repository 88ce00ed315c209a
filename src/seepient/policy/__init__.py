"""Policy (lifecycle step 5): permission rules, consent modes, the path guard and self-protection.

Other packages call ``PolicyEngine.evaluate``, ``PathGuard`` (the tools' ``PathAccess``) and ``parse_rule``
(the shell analysis it judges lines with is its own package, ``seepient.shell``); ``seepient.policy.explain``
(imported on its own, it prepares actions with the tools) answers ``seepient policy explain``.
"""

from seepient.policy.engine import PolicyEngine, PolicyModeError
from seepient.policy.paths import PathGuard
from seepient.policy.rules import PolicyRuleError, Rule, RuleSet, parse_rule

__all__ = [
    "PathGuard",
    "PolicyEngine",
    "PolicyModeError",
    "PolicyRuleError",
    "Rule",
    "RuleSet",
    "parse_rule",
]
