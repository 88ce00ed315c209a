"""The per-session context: the assembled system prompt, the skills made active so far, the token estimator
and history compaction, behind the few calls the agent loop makes each turn and step."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from seepient.config.sections import ContextSettings
from seepient.config.settings import Settings
from seepient.context.environment import GitJail
from seepient.context.history import (
    CompactionPolicy,
    CompactionResult,
    compact_history,
    model_summariser,
)
from seepient.context.prompt import (
    AssembledPrompt,
    PromptSection,
    active_skill_text,
    assemble_prompt,
    environment_section,
)
from seepient.context.rules import guard_read_check
from seepient.context.skills import Skill, SkillCatalog
from seepient.context.tokens import ASCII_CHARS_PER_TOKEN, TokenEstimator
from seepient.context.warnings import ContextWarning
from seepient.models.base import Model
from seepient.protocol import Message, ModelRequest, PathAccess, ToolSpec, Usage


class ConversationContext:
    """What the model starts every step with, besides the tools: the system prompt and a history that fits.

    ``start_turn`` activates skills the request names or matches; ``fit`` compacts the history near the
    window; ``observe`` calibrates the token estimate with the usage the provider reported.
    """

    def __init__(
        self,
        assembled: AssembledPrompt,
        *,
        settings: ContextSettings | None = None,
        summary_model: Model | None = None,
        summary_model_name: str | None = None,
        estimator: TokenEstimator | None = None,
    ) -> None:
        self.assembled = assembled
        self.settings = settings or ContextSettings()
        self.estimator = estimator or TokenEstimator()
        self._summary_model = summary_model
        self._summary_model_name = summary_model_name or (summary_model.name if summary_model else None)
        self._active: dict[str, tuple[Skill, str]] = {}
        self._active_sections: list[PromptSection] = []
        self._text = assembled.text

    @classmethod
    def open(
        cls,
        workspace: Path,
        *,
        settings: Settings,
        seepient_home: Path | None,
        consent_mode: str,
        sandboxed: bool,
        skills: Sequence[str] = (),
        summary_model: Model | None = None,
        summary_model_name: str | None = None,
        guard: PathAccess | None = None,
        cwd: Path | None = None,
        root: Path = Path("/"),
        environ: Mapping[str, str] | None = None,
        git_jail: GitJail | None = None,
    ) -> ConversationContext:
        """Assemble the prompt for a session. ``skills`` are names the user asked for (``--skill``); an
        unknown one raises ``UnknownSkillError`` (a ``SettingsError``) listing the available skills.
        ``guard`` (the session's path guard) vets project files reached through symbolic links."""
        options = settings.context
        estimator = TokenEstimator()
        assembled = assemble_prompt(
            workspace,
            seepient_home=seepient_home,
            consent_mode=consent_mode,
            sandboxed=sandboxed,
            instructions=settings.instructions,
            cwd=cwd,
            rule_file_max_chars=options.rule_file_max_chars,
            rules_max_chars=options.rules_max_chars,
            read_check=guard_read_check(guard) if guard is not None else None,
            root=root,
            environ=environ,
            git_jail=git_jail,
            estimator=estimator,
            memory_max_chars=options.memory_max_chars,
        )
        context = cls(
            assembled,
            settings=options,
            summary_model=summary_model,
            summary_model_name=summary_model_name,
            estimator=estimator,
        )
        for name in dict.fromkeys(skills):
            context.activate(assembled.skills.require(name).name, "named by the user (--skill)")
        return context

    # -- the prompt --------------------------------------------------------------------------------------

    @property
    def skills(self) -> SkillCatalog:
        return self.assembled.skills

    @property
    def warnings(self) -> tuple[ContextWarning, ...]:
        return self.assembled.warnings

    @property
    def active_skills(self) -> list[str]:
        return list(self._active)

    def sections(self) -> tuple[PromptSection, ...]:
        return (*self.assembled.sections, *self._active_sections)

    def system_prompt(self) -> str:
        return self._text

    def activate(self, name: str, reason: str) -> bool:
        """Put a skill's full instructions into the system prompt from now on; False if it already was."""
        if name in self._active:
            return False
        skill = self.skills.require(name)
        self._active[name] = (skill, reason)
        text = active_skill_text(skill, reason)
        self._active_sections.append(
            PromptSection(
                id="active-skill",
                title=f"Active skill: {name}",
                source=str(skill.path),
                text=text,
                tokens=self.estimator.text(text),
            )
        )
        self._text = "\n\n".join(section.text for section in self.sections())
        return True

    def set_consent_mode(self, mode: str) -> None:
        """The user switched the consent mode: from the next request on, the environment section says so, so the
        model neither asks for approvals the mode no longer needs nor assumes ones it now does."""
        environment = dataclasses.replace(self.assembled.environment, consent_mode=mode)
        fresh = environment_section(self.estimator, environment)
        sections = tuple(fresh if s.id == "environment" else s for s in self.assembled.sections)
        self.assembled = dataclasses.replace(self.assembled, sections=sections, environment=environment)
        self._text = "\n\n".join(section.text for section in self.sections())

    def start_turn(self, request: str) -> str:
        """Activate the skills ``request`` names or matches, then return the system prompt for the turn.

        Active skills stay for the rest of the session: a task that needed a skill's instructions usually
        still needs them a turn later, and a stable prompt keeps the provider's prompt cache warm.
        """
        for match in self.skills.match(request, threshold=self.settings.skill_match_threshold):
            self.activate(match.skill.name, f"matched to the request ({match.reason})")
        return self._text

    # -- the history ----------------------------------------------------------------------------------------

    def set_summary_model(self, model: Model | None, name: str | None = None) -> None:
        """Write summaries with ``model`` from now on (the router's efficient tier, once it exists)."""
        self._summary_model = model
        self._summary_model_name = name or (model.name if model is not None else None)

    def policy(self) -> CompactionPolicy:
        return CompactionPolicy(
            window_tokens=self.settings.window_tokens,
            compact_at=self.settings.compact_at,
            keep_recent_turns=self.settings.keep_recent_turns,
            # A summary may take a tenth of a small window, never more than 2,000 tokens.
            summary_max_tokens=min(2_000, max(256, self.settings.window_tokens // 10)),
            transcript_max_tokens=max(4_000, self.settings.window_tokens // 2),
        )

    async def fit(
        self,
        system: str,
        history: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        force: bool = False,
    ) -> CompactionResult | None:
        """The compacted history when the request would pass ``compactAt`` of the window (or ``force``),
        else None. A failed summary call never fails the turn: a plain digest stands in for it."""
        policy = self.policy()
        summarise = None
        if self._summary_model is not None:
            summarise = model_summariser(
                self._summary_model,
                self._summary_model_name or self._summary_model.name,
                max_tokens=policy.summary_max_tokens,
                transcript_chars=int(policy.transcript_max_tokens * ASCII_CHARS_PER_TOKEN),
            )
        return await compact_history(
            system,
            history,
            tools,
            policy=policy,
            estimator=self.estimator,
            summarise=summarise,
            summary_model=self._summary_model_name,
            force=force,
        )

    def observe(self, request: ModelRequest, usage: Usage) -> None:
        """Calibrate the estimate with what the provider counted for ``request``."""
        raw = self.estimator.raw_request("", request.messages, request.tools)
        self.estimator.calibrate(raw, usage)

    def estimate(self, system: str, history: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        return self.estimator.request(system, history, tools)
