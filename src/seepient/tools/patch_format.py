"""The multi-file patch format OpenAI models are trained on (``*** Begin Patch`` … ``*** End Patch``): parsing
it into file operations, and applying an update's context hunks to a file's text.

Grammar (markers may carry surrounding whitespace; a trailing CR on any line is ignored)::

    *** Begin Patch
    *** Add File: PATH         then lines that each start with '+'
    *** Delete File: PATH
    *** Update File: PATH      then, optionally, *** Move to: NEW_PATH, then one or more hunks:
        @@ [ANCHOR]            a hunk header; ANCHOR is a line to find first (the first hunk may omit it)
        ' ' context, '-' removed, '+' added lines; an empty line is an empty context line
        *** End of File        the hunk's lines end the file
    *** End Patch

Hunks are found in order, each after the previous one. Context is compared exactly first, then ignoring
trailing whitespace, then ignoring leading and trailing whitespace, then also treating typographic quotes,
dashes and spaces as their ASCII forms, because that is how real models misquote files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seepient.protocol.errors import InvalidInputError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
_ADD = "*** Add File:"
_DELETE = "*** Delete File:"
_UPDATE = "*** Update File:"
_MOVE = "*** Move to:"
_END_OF_FILE = "*** End of File"
_HEREDOC_START = re.compile(r"^(?:apply_patch\s+)?<<-?\s*(['\"]?)(\w+)\1\s*$")
_DIFF_RANGE = re.compile(r"^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?")
_PUNCTUATION = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2009": " ",
        "\u202f": " ",
        "\u3000": " ",
        "\ufeff": None,
    }
)


class PatchError(InvalidInputError, ValueError):
    """A patch that cannot be parsed or applied; the message says where and what to send instead."""


@dataclass(frozen=True)
class Hunk:
    anchor: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    at_end: bool
    line: int
    """The hunk's first line in the patch (1-based), for error messages."""


@dataclass(frozen=True, kw_only=True)
class _Operation:
    path: str
    """The file the section names, as the patch spells it."""
    line: int
    """The section's header line in the patch (1-based), for error messages."""


@dataclass(frozen=True, kw_only=True)
class AddFile(_Operation):
    content: str


@dataclass(frozen=True, kw_only=True)
class DeleteFile(_Operation):
    """A file the patch deletes: its path is all the section says."""


@dataclass(frozen=True, kw_only=True)
class UpdateFile(_Operation):
    move_to: str | None
    hunks: tuple[Hunk, ...]


FileOperation = AddFile | DeleteFile | UpdateFile


def _strip_heredoc(lines: list[str]) -> list[str]:
    """``<<'EOF'`` … ``EOF`` around the patch, as models copy it from a shell invocation."""
    if len(lines) >= 2:
        match = _HEREDOC_START.match(lines[0].strip())
        if match is not None and lines[-1].strip() == match.group(2):
            return lines[1:-1]
    return lines


def parse_patch(text: str) -> list[FileOperation]:
    """The file operations of a patch, in order; raises ``PatchError`` naming the offending line."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    offset = start  # patch line numbers stay those of the text as sent
    lines = lines[start:]
    unwrapped = _strip_heredoc(lines)
    if unwrapped is not lines:
        offset += 1
        lines = unwrapped
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"the patch must start with a line '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"the patch must end with a line '{END}'")
    return _Parser(lines[1:-1], offset + 2).operations()


class _Parser:
    def __init__(self, body: list[str], first_line: int) -> None:
        self.body = body
        self.first_line = first_line
        self.at = 0

    def _number(self) -> int:
        return self.first_line + self.at

    def _peek(self) -> str | None:
        return self.body[self.at] if self.at < len(self.body) else None

    def operations(self) -> list[FileOperation]:
        found: list[FileOperation] = []
        while (line := self._peek()) is not None:
            marker = line.strip()
            if not marker:
                self.at += 1
                continue
            number = self._number()
            if marker.startswith(_ADD):
                self.at += 1
                found.append(
                    AddFile(path=_path(marker, _ADD, number), line=number, content=self._added_content())
                )
            elif marker.startswith(_DELETE):
                self.at += 1
                found.append(DeleteFile(path=_path(marker, _DELETE, number), line=number))
            elif marker.startswith(_UPDATE):
                self.at += 1
                found.append(self._update(_path(marker, _UPDATE, number), number))
            else:
                raise PatchError(
                    f"line {number}: {_shown(line)} is not a file operation; each file starts with "
                    f"'{_ADD} PATH', '{_DELETE} PATH' or '{_UPDATE} PATH'"
                )
        if not found:
            raise PatchError("the patch changes no file: add at least one Add, Delete or Update File section")
        return found

    def _at_header(self, line: str) -> bool:
        marker = line.strip()
        return marker.startswith((_ADD, _DELETE, _UPDATE))

    def _added_content(self) -> str:
        content: list[str] = []
        blanks = 0
        while (line := self._peek()) is not None and not self._at_header(line):
            if line.startswith("+"):
                content.extend([""] * blanks)
                blanks = 0
                content.append(line[1:])
            elif not line.strip():
                # A bare empty line is kept only when more content follows: it separates sections otherwise.
                blanks += 1
            else:
                raise PatchError(
                    f"line {self._number()}: {_shown(line)} in an Add File section; every line of a new file "
                    "starts with '+'"
                )
            self.at += 1
        return "".join(f"{line}\n" for line in content)

    def _update(self, path: str, number: int) -> UpdateFile:
        move_to: str | None = None
        line = self._peek()
        if line is not None and line.strip().startswith(_MOVE):
            move_to = _path(line.strip(), _MOVE, self._number())
            self.at += 1
        hunks: list[Hunk] = []
        while (line := self._peek()) is not None and not self._at_header(line):
            if not hunks and not line.strip().startswith("@@") and not line.startswith((" ", "+", "-")):
                if not line.strip():
                    self.at += 1
                    continue
                raise PatchError(
                    f"line {self._number()}: {_shown(line)} after '{_UPDATE} {path}'; a hunk starts with '@@' "
                    "(optionally followed by a line to find) and its lines start with ' ', '-' or '+'"
                )
            hunks.append(self._hunk(first=not hunks))
        if not hunks:
            raise PatchError(
                f"line {number}: '{_UPDATE} {path}' has no hunk; give at least one '@@' hunk with ' ', '-' "
                "and '+' lines"
            )
        return UpdateFile(path=path, line=number, move_to=move_to, hunks=tuple(hunks))

    def _hunk(self, *, first: bool) -> Hunk:
        number = self._number()
        anchor: str | None = None
        header = self.body[self.at].strip()
        if header.startswith("@@"):
            self.at += 1
            rest = header[2:].strip()
            # A unified-diff header (@@ -3,4 +3,5 @@ def f():) is accepted for the text after its ranges.
            rest = _DIFF_RANGE.sub("", rest).strip()
            anchor = rest or None
        elif not first:
            raise PatchError(f"line {number}: expected '@@' to start the next hunk")
        old: list[str] = []
        new: list[str] = []
        at_end = False
        while (line := self._peek()) is not None:
            marker = line.strip()
            if self._at_header(line) or marker.startswith("@@"):
                break
            if marker == _END_OF_FILE:
                at_end = True
                self.at += 1
                break
            if line.startswith("+"):
                new.append(line[1:])
            elif line.startswith("-"):
                old.append(line[1:])
            elif line.startswith(" ") or line == "":
                old.append(line[1:])
                new.append(line[1:])
            else:
                raise PatchError(
                    f"line {self._number()}: {_shown(line)} in a hunk; every hunk line starts with ' ' "
                    "(context), '-' (removed) or '+' (added)"
                )
            self.at += 1
        if not old and not new:
            raise PatchError(f"line {number}: the hunk is empty; give its ' ', '-' and '+' lines")
        return Hunk(anchor, tuple(old), tuple(new), at_end, number)


def _path(marker: str, prefix: str, number: int) -> str:
    path = marker[len(prefix) :].strip()
    if not path:
        raise PatchError(f"line {number}: '{prefix}' names no path")
    return path


def _shown(line: str) -> str:
    return repr(line if len(line) <= 80 else line[:77] + "...")


# -- applying hunks -----------------------------------------------------------------------------------

_Compare = Callable[[str], str]
_TIERS: tuple[_Compare, ...] = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.translate(_PUNCTUATION).strip(),
)


class _Views:
    """The file's lines under each comparison, each computed once and only when a hunk needs it."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._views: dict[int, list[str]] = {}

    def tier(self, number: int) -> list[str]:
        if number not in self._views:
            self._views[number] = [_TIERS[number](line) for line in self.lines]
        return self._views[number]

    def find(self, pattern: Sequence[str], start: int, at_end: bool) -> int | None:
        """The first index at or after ``start`` where ``pattern`` matches, trying ever looser comparisons;
        a hunk marked end-of-file tries the file's last lines first."""
        if not pattern:
            return None
        size = len(pattern)
        last = len(self.lines) - size
        for number, norm in enumerate(_TIERS):
            wanted = [norm(line) for line in pattern]
            view = self.tier(number)
            if at_end and last >= start and view[last : last + size] == wanted:
                return last
            first = wanted[0]
            for index in range(start, last + 1):
                if view[index] == first and view[index : index + size] == wanted:
                    return index
        return None

    def find_line(self, wanted: str, start: int) -> int | None:
        for number, norm in enumerate(_TIERS):
            target = norm(wanted)
            view = self.tier(number)
            for index in range(start, len(view)):
                if view[index] == target:
                    return index
        return None


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str) -> str:
    """``text`` with every hunk applied; raises ``PatchError`` when a hunk's context is not in the file.

    The result ends with a newline; a file whose lines end in CRLF keeps CRLF.
    """
    crlf = "\r\n" in text and text.count("\r\n") >= text.count("\n") - text.count("\r\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if crlf:
        lines = [line.removesuffix("\r") for line in lines]
    views = _Views(lines)
    cursor = 0
    replacements: list[tuple[int, int, tuple[str, ...]]] = []
    for hunk in hunks:
        if hunk.anchor is not None:
            found = views.find_line(hunk.anchor, cursor)
            if found is None:
                raise PatchError(
                    f"{path}: the hunk at patch line {hunk.line} looks for the line {_shown(hunk.anchor)} "
                    f"(after its '@@'), which is not in the file{_after(cursor)}"
                )
            cursor = found + 1
        old, new = hunk.old_lines, hunk.new_lines
        if not old:
            # Only added lines: after the anchor when there is one, else at the end of the file.
            where = cursor if hunk.anchor is not None else len(lines)
            replacements.append((where, 0, new))
            continue
        start = views.find(old, cursor, hunk.at_end)
        if start is None and old[-1] == "":
            # A trailing empty context line often stands for the end of the file rather than a blank line.
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            start = views.find(old, cursor, hunk.at_end)
        if start is None:
            raise PatchError(_miss(path, hunk, lines, cursor))
        replacements.append((start, len(old), new))
        cursor = start + len(old)
    for start, length, new in sorted(replacements, key=lambda item: item[0], reverse=True):
        lines[start : start + length] = new
    if not lines:
        return ""
    newline = "\r\n" if crlf else "\n"
    return newline.join(lines) + newline


def _after(cursor: int) -> str:
    return f" after line {cursor}" if cursor else ""


def _miss(path: str, hunk: Hunk, lines: Sequence[str], cursor: int) -> str:
    wanted = "\n".join(hunk.old_lines)
    shown = wanted if len(wanted) <= 600 else wanted[:597] + "..."
    return (
        f"{path}: the lines the hunk at patch line {hunk.line} expects (its ' ' and '-' lines) are not in the "
        f"file{_after(cursor)}:\n{shown}\nRead the file again and copy those lines exactly; hunks must appear "
        f"in file order."
    )
