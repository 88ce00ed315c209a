"""Policy (lifecycle step 5): permission rules, consent modes, the path guard, self-protection and shell analysis.

Other packages call ``PolicyEngine.evaluate``, ``PathGuard`` (the tools' ``PathAccess``) and ``analyse_command``.
"""

from seepient.policy.engine import PolicyEngine
from seepient.policy.paths import PathGuard
from seepient.policy.rules import PolicyRuleError, Rule, RuleSet, parse_rule
from seepient.policy.shell import CommandFacts, ShellAnalysis, analyse_command

__all__ = [
    "CommandFacts",
    "PathGuard",
    "PolicyEngine",
    "PolicyRuleError",
    "Rule",
    "RuleSet",
    "ShellAnalysis",
    "analyse_command",
    "parse_rule",
]
