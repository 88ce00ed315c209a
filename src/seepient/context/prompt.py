"""Assembles the system prompt section by section: identity, environment, AGENTS.md rules, the user's
settings instructions, the skill catalogue and the instructions of active skills.

Each section keeps its source and an estimated token count, so ``seepient context show`` can print exactly
what the model will read and where every part came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from seepient.context.environment import EnvironmentFacts, GitJail, GitProbe, GitState, gather_environment
from seepient.context.memory_prompt import DEFAULT_MEMORY_MAX_CHARS, read_memory_snapshot
from seepient.context.rules import (
    DEFAULT_FILE_MAX_CHARS,
    DEFAULT_TOTAL_MAX_CHARS,
    RULES_FILE,
    ReadCheck,
    RuleSet,
    discover_rules,
    find_repository_root,
)
from seepient.context.skills import Skill, SkillCatalog, discover_skills
from seepient.context.tokens import TokenEstimator
from seepient.context.warnings import ContextWarning, unique_warnings

CATALOG_MAX_CHARS = 12_000

IDENTITY = """You are Seepient, a coding agent working in the user's project.
You act only through the tools you are given. Every file change and shell command you request is checked
against policy, may need the user's approval, and is recorded in an audit log; the Environment section says
whether shell commands run in a sandbox. If an action is denied or rejected, read the reason and propose
something else; do not try to get around a refusal. Keep answers short and say what you changed."""

RULES_PREAMBLE = f"""# Rules
The user and the project give you rules in {RULES_FILE} (or CLAUDE.md) files, shown below farthest first. When two rules
disagree, the later one (closer to the working directory) takes precedence. A subdirectory may hold its own
{RULES_FILE} with rules for the files in it: read it before working there."""

SKILLS_PREAMBLE = """# Skills
Skills are instructions for particular tasks. When a request matches a skill's description, load the skill
with the skill tool (give its name) before you start, then follow it. Paths a skill mentions are relative to
its directory; read those files with read_file. Available skills:"""


@dataclass(frozen=True)
class PromptSection:
    """One part of the system prompt. ``text`` is exactly what the prompt holds for it (heading included);
    ``source`` says where it came from (``built-in``, ``detected``, a file, ``settings``)."""

    id: str
    title: str
    source: str
    text: str
    tokens: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "tokens": self.tokens,
            "text": self.text,
        }


@dataclass(frozen=True)
class AssembledPrompt:
    sections: tuple[PromptSection, ...]
    warnings: tuple[ContextWarning, ...]
    environment: EnvironmentFacts
    rules: RuleSet
    skills: SkillCatalog

    @property
    def text(self) -> str:
        return "\n\n".join(section.text for section in self.sections)

    @property
    def tokens(self) -> int:
        return sum(section.tokens for section in self.sections)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sections": [section.as_dict() for section in self.sections],
            "total_tokens": self.tokens,
            "warnings": [{"source": w.source, "message": w.message} for w in self.warnings],
            "environment": self.environment.as_dict(),
            "skills": [
                {"name": s.name, "description": s.description, "scope": s.scope, "path": str(s.path)}
                for s in self.skills
            ],
        }


def _section(estimator: TokenEstimator, id: str, title: str, source: str, text: str) -> PromptSection:
    return PromptSection(id=id, title=title, source=source, text=text, tokens=estimator.text(text))


def _instructions_text(instructions: str | Sequence[str] | None) -> str | None:
    if instructions is None:
        return None
    parts = [instructions] if isinstance(instructions, str) else list(instructions)
    text = "\n".join(part.strip() for part in parts if part and part.strip())
    return text or None


def skill_catalogue_text(skills: SkillCatalog, *, max_chars: int = CATALOG_MAX_CHARS) -> str:
    lines = [SKILLS_PREAMBLE]
    used = len(SKILLS_PREAMBLE)
    unlisted: list[str] = []
    for skill in skills:
        line = f"- {skill.name}: {skill.description}"
        if used + len(line) + 1 > max_chars:
            unlisted.append(skill.name)
            continue
        lines.append(line)
        used += len(line) + 1
    if unlisted:
        lines.append(
            f"- {len(unlisted)} more skill(s), listed by name only to save space (load one to read it): "
            + ", ".join(unlisted)
        )
    return "\n".join(lines)


def active_skill_text(skill: Skill, reason: str) -> str:
    where = "the user's skills" if skill.scope == "user" else "the workspace"
    return (
        f"# Active skill: {skill.name}\n"
        f"Loaded because it was {reason}. From {where}: {skill.path}. Paths it mentions are relative to "
        f"{skill.directory}.\n\n{skill.body.rstrip()}"
    )


def environment_section(estimator: TokenEstimator, environment: EnvironmentFacts) -> PromptSection:
    return _section(
        estimator, "environment", "Environment", "detected", "# Environment\n" + environment.render()
    )


def static_sections(
    estimator: TokenEstimator,
    *,
    environment: EnvironmentFacts,
    rules: RuleSet,
    instructions: str | Sequence[str] | None,
    skills: SkillCatalog,
) -> list[PromptSection]:
    """Every section that does not depend on the request: identity, environment, rules, settings, catalogue."""
    sections = [
        _section(estimator, "identity", "Identity", "built-in", IDENTITY),
        environment_section(estimator, environment),
    ]
    if rules.files:
        sections.append(_section(estimator, "rules", "Rules", "built-in", RULES_PREAMBLE))
        for rule in rules.files:
            owner = "the user's rules" if rule.scope == "user" else "the project's rules"
            sections.append(
                _section(
                    estimator,
                    "rules-file",
                    f"{rule.label} ({owner})",
                    str(rule.path),
                    f"## {rule.label} ({owner})\n{rule.text.strip()}",
                )
            )
    settings_text = _instructions_text(instructions)
    if settings_text:
        sections.append(
            _section(
                estimator,
                "instructions",
                "Instructions from settings",
                "settings: instructions",
                f"# Instructions from the user's settings\n{settings_text}",
            )
        )
    if len(skills):
        sections.append(
            _section(estimator, "skills", "Skill catalogue", "skills", skill_catalogue_text(skills))
        )
    return sections


def assemble_prompt(
    workspace: Path,
    *,
    seepient_home: Path | None,
    consent_mode: str = "ask-untrusted",
    sandboxed: bool = True,
    instructions: str | Sequence[str] | None = None,
    active: Sequence[tuple[Skill, str]] = (),
    cwd: Path | None = None,
    rule_file_max_chars: int = DEFAULT_FILE_MAX_CHARS,
    rules_max_chars: int = DEFAULT_TOTAL_MAX_CHARS,
    read_check: ReadCheck | None = None,
    root: Path = Path("/"),
    environ: Mapping[str, str] | None = None,
    now: datetime | None = None,
    git_jail: GitJail | None = None,
    estimator: TokenEstimator | None = None,
    memory_max_chars: int = DEFAULT_MEMORY_MAX_CHARS,
) -> AssembledPrompt:
    """Discover rules and skills, detect the environment and put the prompt together, without a model.

    With a ``seepient_home``, the agent's memory folders for ``workspace`` follow the skill catalogue, cut to
    ``memory_max_chars`` (0 leaves them out)."""
    estimator = estimator or TokenEstimator()
    workspace = Path(os.path.abspath(workspace))
    where = Path(os.path.abspath(cwd)) if cwd is not None else workspace
    repository = find_repository_root(where)
    # git status runs in its own process while the files are read.
    probe = GitProbe(repository, jail=git_jail) if repository is not None else None
    try:
        rules = discover_rules(
            workspace,
            seepient_home=seepient_home,
            cwd=where,
            file_max_chars=rule_file_max_chars,
            total_max_chars=rules_max_chars,
            read_check=read_check,
        )
        skills = discover_skills(workspace, seepient_home=seepient_home, cwd=where, read_check=read_check)
    except BaseException:
        if probe is not None:
            probe.close()
        raise
    git: GitState | GitProbe | None = probe
    environment = gather_environment(
        workspace,
        consent_mode=consent_mode,
        sandboxed=sandboxed,
        cwd=where,
        root=root,
        environ=environ,
        now=now,
        git=git,
    )
    sections = static_sections(
        estimator, environment=environment, rules=rules, instructions=instructions, skills=skills
    )
    memory = (
        read_memory_snapshot(seepient_home, workspace, max_chars=memory_max_chars)
        if seepient_home is not None
        else None
    )
    if memory is not None:
        sections.append(
            _section(estimator, "memory", "Memory (the agent's own notes)", "memory", memory.render())
        )
    for skill, reason in active:
        sections.append(
            _section(
                estimator,
                "active-skill",
                f"Active skill: {skill.name}",
                str(skill.path),
                active_skill_text(skill, reason),
            )
        )
    return AssembledPrompt(
        sections=tuple(sections),
        warnings=unique_warnings((*rules.warnings, *skills.warnings)),
        environment=environment,
        rules=rules,
        skills=skills,
    )


def system_prompt(workspace: Path, *, sandboxed: bool = True, seepient_home: Path | None = None) -> str:
    """The system prompt text for ``workspace`` with default settings (kept for callers of the first cut)."""
    return assemble_prompt(workspace, seepient_home=seepient_home, sandboxed=sandboxed).text
