"""Policy (lifecycle step 5): permission rules, consent modes, the path guard, self-protection and shell analysis.

Other packages call ``PolicyEngine.evaluate``, ``PathGuard`` (the tools' ``PathAccess``), ``analyse_command``
and ``parse_rule``; ``seepient.policy.explain`` (imported on its own, it prepares actions with the tools)
answers ``seepient policy explain``.
"""

from seepient.policy.engine import PolicyEngine, PolicyModeError
from seepient.policy.paths import PathGuard
from seepient.policy.rules import PolicyRuleError, Rule, RuleSet, parse_rule
from seepient.policy.shell import CommandFacts, ShellAnalysis, analyse_command

__all__ = [
    "CommandFacts",
    "PathGuard",
    "PolicyEngine",
    "PolicyModeError",
    "PolicyRuleError",
    "Rule",
    "RuleSet",
    "ShellAnalysis",
    "analyse_command",
    "parse_rule",
]
