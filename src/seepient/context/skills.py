"""Skills in the open Agent Skills layout: ``<dir>/<name>/SKILL.md`` with YAML front matter (``name``,
``description``) above the instructions.

Two kinds of places are searched: the project's ``.agents/skills/`` (in the workspace and each directory
above it up to the repository root) and the user's ``<seepient home>/skills/``. When both hold a skill of
the same name the user's wins and a warning names both files: a repository someone cloned must not be able
to replace a skill the user installed and trusts (``--skill deploy`` should mean the user's ``deploy``).
A file with broken front matter is skipped with a warning naming it. A directory without ``.agents/skills/``
may hold Claude Code's ``.claude/skills/`` (the same layout); it is read in its place, under the same checks.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from seepient.config.settings import SettingsError
from seepient.context.relevance import Bm25Index, terms
from seepient.context.rules import ReadCheck, find_repository_root, read_text_file
from seepient.context.warnings import ContextWarning
from seepient.protocol.errors import InvalidInputError

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS_DIR = Path(".agents") / "skills"
FALLBACK_SKILLS_DIR = Path(".claude") / "skills"
USER_SKILLS_DIR = "skills"
NAME_MAX = 64
DESCRIPTION_MAX = 1024
BODY_MAX_CHARS = 40_000
DEFAULT_MATCH_THRESHOLD = 0.2
DEFAULT_MATCH_LIMIT = 2

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FENCE_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_FENCE_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)

SkillScope = Literal["workspace", "user"]


class SkillFormatError(InvalidInputError, ValueError):
    """A ``SKILL.md`` that cannot be used; the message says what is wrong and how to fix it."""


class UnknownSkillError(SettingsError):
    """The user named a skill that does not exist; the message lists the ones that do."""


@dataclass(frozen=True)
class Skill:
    """One usable skill. ``body`` is the instructions below the front matter (capped, with a notice)."""

    name: str
    description: str
    path: Path
    scope: SkillScope
    body: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def directory(self) -> Path:
        return self.path.parent


@dataclass(frozen=True)
class SkillMatch:
    skill: Skill
    relevance: float
    reason: str


def parse_skill(text: str, *, path: Path, scope: SkillScope) -> tuple[Skill, list[ContextWarning]]:
    """Read one ``SKILL.md``; raises ``SkillFormatError`` when its front matter is unusable."""
    text = text.removeprefix("\ufeff")
    opening = _FENCE_OPEN.match(text)
    if opening is None:
        raise SkillFormatError(
            "has no YAML front matter: the file must start with a '---' line, then 'name:' and "
            "'description:', then another '---' line"
        )
    closing = _FENCE_CLOSE.search(text, opening.end())
    if closing is None:
        raise SkillFormatError("its YAML front matter is never closed: add a '---' line after it")
    front = text[opening.end() : closing.start()]
    body = text[closing.end() :].lstrip("\r\n")
    data = _load_yaml(front)
    if not isinstance(data, dict):
        raise SkillFormatError(
            f"its front matter must be a mapping with 'name' and 'description', not {_kind(data)}"
        )
    name = data.get("name")
    description = data.get("description")
    if name is None:
        raise SkillFormatError("its front matter has no 'name'")
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > NAME_MAX:
        raise SkillFormatError(
            f"its name {name!r} is not valid: use 1 to {NAME_MAX} lower-case letters, digits and single "
            "hyphens (for example 'pdf-forms')"
        )
    if description is None:
        raise SkillFormatError("its front matter has no 'description'")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError(
            "its 'description' must be non-empty text saying what it does and when to use it"
        )
    warnings: list[ContextWarning] = []
    description = " ".join(description.split())
    if len(description) > DESCRIPTION_MAX:
        warnings.append(
            ContextWarning(
                str(path), f"its description is longer than {DESCRIPTION_MAX} characters and was cut"
            )
        )
        description = description[: DESCRIPTION_MAX - 1] + "…"
    if name != path.parent.name:
        warnings.append(
            ContextWarning(
                str(path),
                f"its name {name!r} differs from its directory {path.parent.name!r}; it is listed as {name!r}",
            )
        )
    if len(body) > BODY_MAX_CHARS:
        body = (
            body[:BODY_MAX_CHARS].rstrip()
            + f"\n[{SKILL_FILE} of {name} was cut here: it has {len(body):,} characters; read the rest of "
            f"{path} with read_file if you need it]"
        )
    extra = {k: v for k, v in data.items() if k not in ("name", "description")}
    skill = Skill(name=name, description=description, path=path, scope=scope, body=body, metadata=extra)
    return skill, warnings


_SIMPLE_LINE = re.compile(r"^([a-z][a-z0-9_-]*):[ ]+([^ ].*?)[ ]*$")
_YAML_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`=~")
_YAML_RESOLVED_WORDS = frozenset("yes no on off true false y n null".split())


def simple_front_matter(front: str) -> dict[str, str] | None:
    """The front matter as YAML would read it when every line is ``key: plain text``; None for anything
    else (quotes, lists, block scalars, nesting, comments, values YAML would turn into numbers, booleans,
    dates or null), which then goes to the YAML parser. Most SKILL.md files take this path, and it is
    several times faster than building YAML nodes, which matters with hundreds of skills."""
    data: dict[str, str] = {}
    # Split on line feeds only: str.splitlines() also breaks at form feeds and U+2028, which YAML does not.
    for line in front.split("\n"):
        line = line.removesuffix("\r")
        if not line:
            continue
        match = _SIMPLE_LINE.match(line)
        if match is None:
            return None
        key, value = match.groups()
        if (
            key in data
            or value[0] in _YAML_INDICATORS
            or value[0].isdigit()
            or value[0] in "+."
            or ": " in value
            or " #" in value
            or "\t" in value
            or value.endswith(":")
            or value.lower() in _YAML_RESOLVED_WORDS
            or not value.isprintable()
        ):
            return None
        data[key] = value
    return data or None


def _load_yaml(front: str) -> Any:
    simple = simple_front_matter(front)
    if simple is not None:
        return simple
    import yaml  # costs ~30 ms to import; only front matter the fast path declines pays it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(front, Loader=loader)  # a safe loader: the C one when libyaml is there
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # +2: line numbers count from 1, and the opening '---' is line 1 of the file.
        where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillFormatError(f"its front matter is not valid YAML{where}: {problem}") from None


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a plain string"
    return type(value).__name__


class SkillCatalog:
    """The skills a session can use, by name, with the warnings their discovery produced."""

    def __init__(self, skills: Iterable[Skill] = (), warnings: Iterable[ContextWarning] = ()) -> None:
        self._skills = {skill.name: skill for skill in sorted(skills, key=lambda s: s.name)}
        self.warnings = tuple(warnings)
        self._index: Bm25Index | None = None
        self._order: list[Skill] = []

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._skills

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def names(self) -> list[str]:
        return list(self._skills)

    def require(self, name: str) -> Skill:
        """The skill called ``name``; raises ``UnknownSkillError`` listing the available ones."""
        skill = self._skills.get(name)
        if skill is None:
            available = ", ".join(self._skills) or "none"
            raise UnknownSkillError(
                f"no skill named {name!r} (available: {available}); skills live in "
                f"{WORKSPACE_SKILLS_DIR}/<name>/{SKILL_FILE} (else {FALLBACK_SKILLS_DIR}/) or "
                f"<seepient home>/{USER_SKILLS_DIR}/<name>/{SKILL_FILE}"
            )
        return skill

    def match(
        self,
        request: str,
        *,
        threshold: float = DEFAULT_MATCH_THRESHOLD,
        limit: int = DEFAULT_MATCH_LIMIT,
    ) -> list[SkillMatch]:
        """Skills the request is about, best first: named outright (``pdf-forms`` or ``pdf forms``), or whose
        description the request covers to at least ``threshold`` with two or more distinct terms."""
        if not self._skills or limit <= 0:
            return []
        lowered = " " + " ".join(re.findall(r"[a-z0-9]+", request.lower())) + " "
        named = [
            SkillMatch(skill, 1.0, "named in the request")
            for skill in self._skills.values()
            if _named_in(skill.name, lowered)
        ]
        found = {m.skill.name for m in named}
        ranked: list[SkillMatch] = []
        index = self._ensure_index()
        for hit in index.rank(terms(request)):
            skill = self._order[hit.index]
            if skill.name in found or len(hit.matched) < 2 or hit.relevance < threshold:
                continue
            ranked.append(
                SkillMatch(
                    skill,
                    hit.relevance,
                    f"the request covers {hit.relevance:.0%} of its description ({', '.join(hit.matched)})",
                )
            )
        return (named + ranked)[:limit]

    def _ensure_index(self) -> Bm25Index:
        if self._index is None:
            self._order = list(self._skills.values())
            # The name counts twice: it is the shortest statement of what the skill is for.
            self._index = Bm25Index(
                [terms(f"{s.name.replace('-', ' ')} " * 2 + s.description) for s in self._order]
            )
        return self._index


def _named_in(name: str, words: str) -> bool:
    """Whether space-joined ``words`` name the skill: a hyphenated name as a phrase (``pdf forms``), a
    one-word name only beside the word "skill" (a skill called ``test`` must not join every request
    that mentions a test)."""
    phrase = name.replace("-", " ")
    if "-" in name:
        return f" {phrase} " in words
    return f" {phrase} skill " in words or f" skill {phrase} " in words


def discover_skills(
    workspace: Path,
    *,
    seepient_home: Path | None,
    cwd: Path | None = None,
    read_check: ReadCheck | None = None,
) -> SkillCatalog:
    """Every usable skill of the project and the user, with a warning for each one skipped.

    Project skills come from ``.agents/skills`` (else ``.claude/skills``) in every directory from the repository
    root down to ``cwd`` (default: the workspace), as ``AGENTS.md`` files do; of two project skills with one name the nearer
    one is used. A user skill beats any project skill of the same name.
    """
    warnings: list[ContextWarning] = []
    workspace = Path(os.path.abspath(workspace))
    where = Path(os.path.abspath(cwd)) if cwd is not None else workspace
    if where != workspace and workspace not in where.parents:
        where = workspace
    root = find_repository_root(where) or workspace
    parts = where.relative_to(root).parts
    chain = [root.joinpath(*parts[:depth]) for depth in range(len(parts) + 1)]
    user: list[Skill] = []
    if seepient_home is not None:
        user = _scan(Path(seepient_home) / USER_SKILLS_DIR, "user", None, None, warnings)
    project: list[Skill] = []
    for directory in reversed(chain):  # nearest first: the first of a name is kept
        project += _scan(_skills_dir_in(directory), "workspace", root, read_check, warnings)
    chosen: dict[str, Skill] = {}
    for skill in user + project:
        kept = chosen.get(skill.name)
        if kept is None:
            chosen[skill.name] = skill
        elif kept.scope == skill.scope:
            warnings.append(
                ContextWarning(
                    str(skill.path),
                    f"another skill is also named {skill.name!r} ({kept.path}); that one is used and this one "
                    "is skipped",
                )
            )
        else:
            warnings.append(
                ContextWarning(
                    str(skill.path),
                    f"the project skill {skill.name!r} is shadowed by the user's skill of the same name "
                    f"({kept.path}); the user's skill is used. Rename one of them to use both",
                )
            )
    return SkillCatalog(chosen.values(), warnings)


def _skills_dir_in(directory: Path) -> Path:
    """``directory``'s ``.agents/skills``, or its ``.claude/skills`` when there is no ``.agents/skills``."""
    preferred = directory / WORKSPACE_SKILLS_DIR
    if os.path.lexists(preferred):
        return preferred
    fallback = directory / FALLBACK_SKILLS_DIR
    return fallback if os.path.lexists(fallback) else preferred


def _scan(
    base: Path,
    scope: SkillScope,
    containment_root: Path | None,
    read_check: ReadCheck | None,
    warnings: list[ContextWarning],
) -> list[Skill]:
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        warnings.append(ContextWarning(str(base), "is not a directory; no skills were read from it"))
        return []
    except OSError as exc:
        warnings.append(
            ContextWarning(str(base), f"cannot be listed ({exc.strerror}); no skills were read from it")
        )
        return []
    real_root = os.path.realpath(containment_root) if containment_root is not None else None
    if real_root is not None:
        # One walk for the skills directory itself (``.agents`` or ``skills`` may be links); below it only
        # entries that are links need one, which keeps 200 skills in a deep tree cheap.
        refusal = _escape_refusal(str(base), real_root, read_check)
        if refusal is not None:
            warnings.append(ContextWarning(str(base), f"{refusal}; no skills were read from it"))
            return []
    skills: list[Skill] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if not entry.is_dir():
                continue
            linked = entry.is_symlink()
        except OSError:
            continue
        # A child of an already-parsed Path: building each path from its full string would re-split every
        # component of a deep workspace for every skill.
        path = base / entry.name / SKILL_FILE
        try:
            linked = linked or stat.S_ISLNK(os.lstat(path).st_mode)
        except FileNotFoundError:
            warnings.append(ContextWarning(entry.path, f"holds no {SKILL_FILE}; it is not a skill"))
            continue
        except OSError as exc:
            warnings.append(
                ContextWarning(str(path), f"cannot be inspected ({exc.strerror}); it was skipped")
            )
            continue
        if real_root is not None and linked:
            refusal = _escape_refusal(str(path), real_root, read_check)
            if refusal is not None:
                warnings.append(ContextWarning(str(path), f"{refusal}; the skill was skipped"))
                continue
        text = read_text_file(path, warnings)
        if text is None:
            continue
        try:
            skill, found = parse_skill(text, path=path, scope=scope)
        except SkillFormatError as exc:
            warnings.append(ContextWarning(str(path), f"{exc}; the skill was skipped"))
            continue
        warnings.extend(found)
        skills.append(skill)
    return skills


def _escape_refusal(path: str, real_root: str, read_check: ReadCheck | None) -> str | None:
    """Why a project skill reached through a symbolic link may not be read: it must resolve inside the
    project (the repository root, else the workspace), and not to a location the path guard refuses."""
    real = os.path.realpath(path)
    if real == path:
        return None
    if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
        return f"resolves through a symbolic link to {real}, outside the project"
    if read_check is not None:
        reason = read_check(Path(real))
        if reason is not None:
            return f"resolves through a symbolic link to {real}, which is refused: {reason}"
    return None
