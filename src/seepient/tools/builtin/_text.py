"""Text helpers shared by the file tools: decoding, line splitting, numbered views, diffs and the fuzzy
search that tells a model where its failed edit was probably aimed."""

from __future__ import annotations

import difflib
import hashlib
import heapq
import re
from collections import Counter
from dataclasses import dataclass

from seepient.protocol.errors import InvalidInputError

MAX_LINE_CHARS = 2000
"""Longer lines are cut when shown: one minified line must not eat the whole result budget."""

_FUZZY_MAX_FILE_LINES = 50_000
_FUZZY_CANDIDATES = 3
_FUZZY_COMMON_LINES = 20
_FUZZY_WHOLE_TEXT_CHARS = 800
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


class BinaryContent(InvalidInputError, ValueError):
    """The bytes are not text the tools can show or edit; the message says why."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode_text(data: bytes) -> str:
    """UTF-8 text, or ``BinaryContent``. A NUL byte means binary even when it decodes, as in git and grep."""
    if b"\0" in data:
        raise BinaryContent("it contains NUL bytes, so it looks like a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BinaryContent(
            f"it is not valid UTF-8 text (undecodable byte at offset {exc.start}), so it looks like a binary file"
        ) from exc


def text_or_none(data: bytes) -> str | None:
    """``data`` decoded as text, or None when it is binary."""
    try:
        return decode_text(data)
    except BinaryContent:
        return None


def split_lines(text: str) -> list[str]:
    """Lines without their terminators, split on ``\\n`` only (a form feed or U+2028 inside a line does not
    start a new one, so numbers agree with editors, grep and the diff). A final newline ends the last line
    rather than starting an empty one."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def count_lines(text: str) -> int:
    return len(split_lines(text))


def uses_crlf(text: str) -> bool:
    """True when most line breaks are CRLF, so text written into the file should follow suit."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf


def to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def cut_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [line cut: {len(line) - limit} more characters]"


def number_line(number: int, line: str) -> str:
    """One line in ``cat -n`` style: the 1-based number right-aligned in six columns, a tab, the text."""
    return f"{number:>6}\t{line}"


def line_of_offset(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _lines_keepends(text: str) -> list[str]:
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unified_diff(old: str | None, new: str, path: str) -> str:
    """A ``git diff``-style unified diff; ``old`` None means the file is created."""
    diff_lines = difflib.unified_diff(
        _lines_keepends(old or ""),
        _lines_keepends(new),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile=f"b/{path}",
        n=3,
    )
    out: list[str] = []
    for line in diff_lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def replacement_diff(old: str | None, new: str, path: str) -> str:
    """The diff of replacing a file's content; ``old`` None means the file was binary."""
    if old is None:
        return f"Binary file a/{path} replaced by text b/{path}\n"
    return unified_diff(old, new, path)


@dataclass(frozen=True)
class DiffStats:
    added: int
    removed: int

    def label(self) -> str:
        """``+3 −1`` with a real minus sign, as approval prompts show it."""
        return f"+{self.added} \u2212{self.removed}"


def diff_stats(diff: str) -> DiffStats:
    added = removed = 0
    in_hunk = False
    for line in diff.split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return DiffStats(added, removed)


def occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of every occurrence, overlapping ones included: ``aa`` occurs twice in ``aaa``, and an
    edit aimed at either is ambiguous."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


@dataclass(frozen=True)
class ClosestRegion:
    first_line: int
    last_line: int
    similarity: float
    lines: tuple[str, ...]
    whitespace_only: bool


def _squash_whitespace(text: str) -> str:
    return " ".join(text.split())


def _trigrams(line: str) -> Counter[tuple[str, str, str]]:
    padded = f"\n{line}\n"
    return Counter(zip(padded, padded[1:], padded[2:], strict=False))


def _candidate_windows(file_lines: list[str], wanted_lines: list[str], size: int) -> list[int]:
    """Start lines of the windows holding most of ``wanted``'s distinctive character trigrams.

    Trigrams found on most lines of the file (indentation, ``= ``, ``self.``) say nothing about where the
    edit was aimed and would dominate the work, so only the rarer ones are counted. The window slides
    one line at a time and the overlap is updated as lines enter and leave: about one pass over the file
    instead of a diff per window.
    """
    target: Counter[tuple[str, str, str]] = Counter()
    for line in wanted_lines:
        target.update(_trigrams(line))
    per_line = [_trigrams(line) for line in file_lines]
    spread: Counter[tuple[str, str, str]] = Counter()
    for grams in per_line:
        spread.update(grams.keys() & target.keys())
    common = max(_FUZZY_COMMON_LINES, len(file_lines) // 50)
    telling = {gram for gram in target if spread[gram] <= common} or set(target)
    shared = [[(gram, grams[gram]) for gram in grams.keys() & telling] for grams in per_line]
    window: Counter[tuple[str, str, str]] = Counter()
    overlap = 0

    def shift(line: int, sign: int) -> None:
        nonlocal overlap
        for gram, count in shared[line]:
            before = window[gram]
            after = before + sign * count
            window[gram] = after
            overlap += min(after, target[gram]) - min(before, target[gram])

    scored: list[tuple[int, int]] = []
    for end in range(len(file_lines)):
        shift(end, 1)
        if end >= size:
            shift(end - size, -1)
        if end >= size - 1:
            scored.append((overlap, end - size + 1))
    best = heapq.nlargest(_FUZZY_CANDIDATES, scored, key=lambda item: (item[0], -item[1]))
    return [start for _, start in best]


def _similarity(window: list[str], wanted: list[str]) -> float:
    """difflib's ratio of the two texts; for long texts, the length-weighted ratio of aligned line pairs,
    because a whole-text diff grows with the square of the length."""
    joined_window, joined_wanted = "\n".join(window), "\n".join(wanted)
    if len(joined_wanted) <= _FUZZY_WHOLE_TEXT_CHARS:
        return difflib.SequenceMatcher(None, joined_window, joined_wanted, autojunk=False).ratio()
    weight = total = 0.0
    for mine, theirs in zip(window, wanted, strict=False):
        size = len(mine) + len(theirs)
        if size:
            total += size * difflib.SequenceMatcher(None, mine, theirs, autojunk=False).ratio()
            weight += size
    return total / weight if weight else 1.0


def closest_region(text: str, wanted: str) -> ClosestRegion | None:
    """The window of the file, as many lines long as ``wanted``, that is most similar to it.

    Trigram overlap picks a few candidate windows cheaply; difflib's ratio then ranks those exactly.
    """
    file_lines = split_lines(text)
    wanted_lines = split_lines(wanted)
    if not file_lines or not wanted_lines or len(file_lines) > _FUZZY_MAX_FILE_LINES:
        return None
    size = min(len(wanted_lines), len(file_lines))
    target = "\n".join(wanted_lines)
    best_ratio, best_start = -1.0, 0
    for start in sorted(_candidate_windows(file_lines, wanted_lines, size)):
        ratio = _similarity(file_lines[start : start + size], wanted_lines[:size])
        if ratio > best_ratio:
            best_ratio, best_start = ratio, start
    window = tuple(file_lines[best_start : best_start + size])
    return ClosestRegion(
        first_line=best_start + 1,
        last_line=best_start + size,
        similarity=best_ratio,
        lines=window,
        whitespace_only=_squash_whitespace("\n".join(window)) == _squash_whitespace(target),
    )


def looks_line_numbered(text: str) -> bool:
    """True when every non-empty line starts like ``read_file`` output (``    12<TAB>``)."""
    lines = [line for line in split_lines(text) if line.strip()]
    return bool(lines) and all(_LINE_NUMBER_PREFIX.match(line) for line in lines)
