"""Rules: the ``AGENTS.md`` files that apply to a working directory, in precedence order, each capped in size.

Order (later takes precedence): the user's ``<seepient home>/AGENTS.md``, then one file per directory from
the repository root (the nearest ancestor holding ``.git``, else the workspace) down to the working
directory. Project files are read only when they really live inside the repository root, so a cloned
repository cannot point an ``AGENTS.md`` symlink at ``~/.ssh/id_rsa`` and have it sent to the model.

A directory without an ``AGENTS.md`` may hold Claude Code's ``CLAUDE.md`` instead; it is read in its place,
under the same checks and caps, so a team can switch without renaming its files. Where both exist only
``AGENTS.md`` counts.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from seepient.context.warnings import ContextWarning
from seepient.protocol import PathAccess, PathDenied

RULES_FILE = "AGENTS.md"
FALLBACK_RULES_FILE = "CLAUDE.md"
DEFAULT_FILE_MAX_CHARS = 32_000
DEFAULT_TOTAL_MAX_CHARS = 96_000

RuleScope = Literal["user", "project"]

ReadCheck = Callable[[Path], str | None]
"""Answers why a resolved path must not be read (a sensitive location), or None when it may be."""


def guard_read_check(guard: PathAccess) -> ReadCheck:
    """A ``ReadCheck`` asking the session's path guard, so context assembly refuses what ``read_file`` would."""

    def check(path: Path) -> str | None:
        try:
            guard.for_read(str(path))
        except PathDenied as exc:
            return exc.reason
        return None

    return check


@dataclass(frozen=True)
class RuleFile:
    """One ``AGENTS.md`` as it goes into the prompt.

    ``label`` is how the prompt names it (``~/.seepient/AGENTS.md``, ``AGENTS.md``, ``pkg/AGENTS.md``);
    ``chars`` is the file's full length and ``truncated`` says whether ``text`` was cut.
    """

    path: Path
    scope: RuleScope
    label: str
    text: str
    chars: int
    truncated: bool = False


@dataclass(frozen=True)
class RuleSet:
    files: tuple[RuleFile, ...]
    repository_root: Path
    warnings: tuple[ContextWarning, ...] = ()


def find_repository_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a directory, or a file for worktrees
    and submodules)."""
    for directory in (start, *start.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def discover_rules(
    workspace: Path,
    *,
    seepient_home: Path | None,
    cwd: Path | None = None,
    file_max_chars: int = DEFAULT_FILE_MAX_CHARS,
    total_max_chars: int = DEFAULT_TOTAL_MAX_CHARS,
    read_check: ReadCheck | None = None,
) -> RuleSet:
    """Every ``AGENTS.md`` that applies at ``cwd`` (default: the workspace), farthest first.

    Files that cannot be read become warnings, never errors. When all files together exceed
    ``total_max_chars``, the farthest ones (those with the least precedence) are left out first.
    """
    workspace = Path(os.path.abspath(workspace))
    cwd = Path(os.path.abspath(cwd)) if cwd is not None else workspace
    if cwd != workspace and workspace not in cwd.parents:
        cwd = workspace
    root = find_repository_root(cwd) or workspace
    warnings: list[ContextWarning] = []
    found: list[RuleFile] = []
    # The same file reached twice (the home's AGENTS.md linked into a project) is included once.
    seen: set[tuple[int, int]] = set()

    if seepient_home is not None:
        user_file = Path(seepient_home) / RULES_FILE
        rule = _read_rule(user_file, "user", _home_label(user_file), file_max_chars, None, None, warnings)
        if rule is not None:
            seen.add(_identity(user_file))
            found.append(rule)

    relative = cwd.relative_to(root).parts
    for depth in range(len(relative) + 1):
        directory = root.joinpath(*relative[:depth])
        path = rules_file_in(directory)
        label = "/".join((*relative[:depth], path.name))
        rule = _read_rule(path, "project", label, file_max_chars, root, read_check, warnings)
        if rule is None:
            continue
        identity = _identity(path)
        if identity in seen:
            continue
        seen.add(identity)
        found.append(rule)

    kept = _fit_total(found, total_max_chars, warnings)
    return RuleSet(files=tuple(kept), repository_root=root, warnings=tuple(warnings))


def rules_file_in(directory: Path) -> Path:
    """``directory``'s ``AGENTS.md``, or its ``CLAUDE.md`` when there is no ``AGENTS.md`` (not even a broken
    link: a file that is there but unreadable is reported, not replaced)."""
    preferred = directory / RULES_FILE
    if os.path.lexists(preferred):
        return preferred
    fallback = directory / FALLBACK_RULES_FILE
    return fallback if os.path.lexists(fallback) else preferred


def _identity(path: Path) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (-1, hash(str(path)))
    return (info.st_dev, info.st_ino)


def _home_label(path: Path) -> str:
    home = os.path.expanduser("~")
    text = str(path)
    if home not in ("", "/") and text.startswith(home.rstrip("/") + "/"):
        return "~" + text[len(home.rstrip("/")) :]
    return text


def _read_rule(
    path: Path,
    scope: RuleScope,
    label: str,
    max_chars: int,
    root: Path | None,
    read_check: ReadCheck | None,
    warnings: list[ContextWarning],
) -> RuleFile | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(ContextWarning(str(path), f"cannot be inspected ({exc.strerror}); it was skipped"))
        return None
    if stat.S_ISLNK(info.st_mode) and root is not None:
        refusal = _symlink_refusal(path, root, read_check)
        if refusal is not None:
            warnings.append(ContextWarning(str(path), f"{refusal}; it was skipped"))
            return None
    text = read_text_file(path, warnings)
    if text is None:
        return None
    chars = len(text)
    truncated = chars > max_chars
    if truncated:
        text = (
            text[:max_chars].rstrip()
            + f"\n[{label} was cut here: it has {chars:,} characters and only the first {max_chars:,} are shown]"
        )
    return RuleFile(path=path, scope=scope, label=label, text=text, chars=chars, truncated=truncated)


def _symlink_refusal(path: Path, root: Path, read_check: ReadCheck | None) -> str | None:
    """Why a symlinked project file may not be read: it must resolve inside the repository root, and
    not to a location the path guard refuses."""
    target = Path(os.path.realpath(path))
    real_root = Path(os.path.realpath(root))
    if target != real_root and real_root not in target.parents:
        return f"is a symbolic link to {target}, outside {real_root}"
    if read_check is not None:
        reason = read_check(target)
        if reason is not None:
            return f"is a symbolic link to {target}, which is refused: {reason}"
    return None


def read_text_file(path: Path, warnings: list[ContextWarning], *, limit: int = 4 * 1024 * 1024) -> str | None:
    """The text of a regular file, or None with a warning saying why not (a directory, a FIFO, a broken
    link, no permission, not UTF-8). Invalid UTF-8 is replaced rather than refused: a stray byte in a rules
    file should not hide all its rules."""
    try:
        # O_NONBLOCK: a FIFO planted under the expected name must not hang assembly.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if os.path.islink(path):
            warnings.append(ContextWarning(str(path), "is a broken symbolic link; it was skipped"))
        return None
    except IsADirectoryError:
        warnings.append(ContextWarning(str(path), "is a directory, not a file; it was skipped"))
        return None
    except OSError as exc:
        warnings.append(ContextWarning(str(path), f"cannot be read ({exc.strerror}); it was skipped"))
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            warnings.append(ContextWarning(str(path), "is a directory, not a file; it was skipped"))
            return None
        if not stat.S_ISREG(info.st_mode):
            warnings.append(ContextWarning(str(path), "is not a regular file; it was skipped"))
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            # Sized from fstat: asking for the whole limit would allocate megabytes per small file.
            data = handle.read(min(info.st_size, limit) + 1)
    except OSError as exc:
        warnings.append(ContextWarning(str(path), f"cannot be read ({exc.strerror}); it was skipped"))
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        data = data[:limit]
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        warnings.append(ContextWarning(str(path), "is not valid UTF-8; undecodable bytes were replaced"))
    return text.removeprefix("\ufeff")


def _fit_total(found: list[RuleFile], total_max: int, warnings: list[ContextWarning]) -> list[RuleFile]:
    total = sum(len(rule.text) for rule in found)
    if total <= total_max:
        return found
    kept = list(found)
    # Drop from the far end: the nearest files take precedence, so they are the last to go.
    while kept and total > total_max:
        dropped = kept.pop(0)
        total -= len(dropped.text)
        warnings.append(
            ContextWarning(
                str(dropped.path),
                f"left out: all AGENTS.md files together exceed {total_max:,} characters, and nearer files "
                "take precedence",
            )
        )
    return kept
