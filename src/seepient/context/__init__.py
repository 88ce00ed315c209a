"""Context assembly (lifecycle step 2): AGENTS.md rules and settings instructions, skills, environment facts,
the system prompt built from them, offline token estimates and history compaction near the window."""

from seepient.context.environment import (
    ContainerInfo,
    EnvironmentFacts,
    GitState,
    detect_container,
    gather_environment,
)
from seepient.context.history import (
    CompactionPolicy,
    CompactionResult,
    compact_history,
    pairing_problems,
)
from seepient.context.manager import ConversationContext
from seepient.context.prompt import AssembledPrompt, PromptSection, assemble_prompt, system_prompt
from seepient.context.rules import RuleFile, RuleSet, discover_rules, find_repository_root
from seepient.context.skills import (
    Skill,
    SkillCatalog,
    SkillFormatError,
    SkillMatch,
    UnknownSkillError,
    discover_skills,
    parse_skill,
)
from seepient.context.tokens import TokenEstimator, raw_token_estimate
from seepient.context.warnings import ContextWarning

__all__ = [
    "AssembledPrompt",
    "CompactionPolicy",
    "CompactionResult",
    "ContainerInfo",
    "ContextWarning",
    "ConversationContext",
    "EnvironmentFacts",
    "GitState",
    "PromptSection",
    "RuleFile",
    "RuleSet",
    "Skill",
    "SkillCatalog",
    "SkillFormatError",
    "SkillMatch",
    "TokenEstimator",
    "UnknownSkillError",
    "assemble_prompt",
    "compact_history",
    "detect_container",
    "discover_rules",
    "discover_skills",
    "find_repository_root",
    "gather_environment",
    "pairing_problems",
    "parse_skill",
    "raw_token_estimate",
    "system_prompt",
]
