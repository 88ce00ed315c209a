"""``skill``: load the full instructions of a skill the system prompt lists, on the model's request.

Loading is a read of the skill's ``SKILL.md``, prepared as a ``ReadAction`` on that path so policy, approval
and audit see it like any other read; the file is read again at execution through the executor, so the
model gets what is on disk at the path that was checked. Files a skill bundles are read with ``read_file``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from seepient.config import SeepientPaths
from seepient.context.skills import SkillCatalog, SkillFormatError, discover_skills, parse_skill
from seepient.protocol import ApprovedAction, PathDenied, PreparedActionDraft, ReadAction
from seepient.tools.base import Tool, ToolContext, ToolInput, ToolInputError, ToolOutput
from seepient.tools.builtin._common import display_path, expect_payload, read_draft
from seepient.tools.builtin._text import BinaryContent, decode_text


class SkillInput(ToolInput):
    name: str = Field(min_length=1, max_length=64)
    """The skill's name, exactly as listed under Skills in the system prompt."""


class SkillTool(Tool[SkillInput], read_only=True, concurrency_safe=True):
    """Load the full instructions of one of the skills listed under Skills in the system prompt. Do this
    before starting a task that matches a skill's description, then follow the instructions. Paths a skill
    mentions are relative to its directory (shown with the instructions); read them with read_file."""

    name: ClassVar[str] = "skill"
    max_result_chars: ClassVar[int] = 60_000

    def __init__(self, catalog: SkillCatalog | None = None, *, seepient_home: Path | None = None) -> None:
        """``catalog``: the session's (the one its system prompt lists); without one the tool discovers the
        skills of the workspace it is called in at each call."""
        self._catalog = catalog
        self._home = seepient_home

    def _skills(self, ctx: ToolContext) -> SkillCatalog:
        if self._catalog is not None:
            return self._catalog
        home = self._home or SeepientPaths.from_env().home
        return discover_skills(ctx.workspace, seepient_home=home)

    async def prepare(self, args: SkillInput, ctx: ToolContext) -> PreparedActionDraft:
        catalog = self._skills(ctx)
        skill = catalog.get(args.name.strip())
        if skill is None:
            available = ", ".join(catalog.names()) or "none"
            raise ToolInputError(
                f"No skill named {args.name!r}. Available skills: {available}. Use a name exactly as listed."
            )
        # The guard decides whether this path may be read, exactly as for read_file; a refusal here
        # reaches the model and the audit log as a denial naming the rule.
        resolved = ctx.paths.for_read(str(skill.path))
        shown = display_path(resolved)
        params = {"path": shown, "skill": skill.name, "scope": skill.scope}
        return read_draft(ctx, self.name, "read_file", resolved, params, f"Load skill {skill.name} ({shown})")

    async def execute(self, action: ApprovedAction, ctx: ToolContext) -> ToolOutput:
        payload = expect_payload(action, ReadAction)
        absolute = payload.paths[0]
        name = str(payload.params.get("skill", ""))
        scope = payload.params.get("scope", "workspace")
        shown = payload.params.get("path") or absolute
        try:
            data = await ctx.reads.read_file(absolute)
        except FileNotFoundError:
            return ToolOutput(f"The skill {name} is gone: {shown} no longer exists.", is_error=True)
        except PathDenied as exc:
            return ToolOutput(f"Denied: {exc.path}: {exc.reason}", is_error=True, data={"denied": True})
        except OSError as exc:
            return ToolOutput(f"Cannot read {shown}: {exc.strerror or exc}.", is_error=True)
        try:
            skill, _ = parse_skill(
                decode_text(data), path=Path(absolute), scope="user" if scope == "user" else "workspace"
            )
        except BinaryContent as exc:
            return ToolOutput(f"Cannot load the skill {name}: {shown} is not text ({exc}).", is_error=True)
        except SkillFormatError as exc:
            return ToolOutput(f"Cannot load the skill {name}: {shown} {exc}.", is_error=True)
        header = (
            f"Skill {skill.name} ({shown}). Paths it mentions are relative to {skill.directory}; read those "
            "files with read_file.\n\n"
        )
        return ToolOutput(
            header + skill.body.rstrip(),
            data={"skill": skill.name, "path": shown, "chars": len(skill.body)},
        )
