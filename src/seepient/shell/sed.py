"""sed: a reader for its scripts (GNU syntax), which files a script reads or writes and whether it runs
commands, and its command line (``-i``, ``-e``, ``-f``) turned into the files it opens.

sed is not just substitution: ``w FILE`` and ``s///w FILE`` write files, ``r FILE`` reads one, and GNU's
``e COMMAND`` and ``s///e`` run shell commands. A script this reader cannot follow is reported as such,
so policy asks instead of guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seepient.protocol.errors import InvalidInputError
from seepient.shell.interpretation import Interpretation, Word
from seepient.shell.options import option_spec, parse_options

# Commands that only move text between the buffers and standard output.
_PLAIN = frozenset("=dDgGhHlLnNpPxzF")
_PRINT_ONLY = frozenset("=lpPnNqQF")  # what `sed -n` needs to show parts of a file
_LABELLED = frozenset("btT")
_TEXT = frozenset("aic")
_FILES_READ = frozenset("rR")
_FILES_WRITTEN = frozenset("wW")
_WRITE_SINKS = frozenset({"/dev/stdout", "/dev/stderr"})


class SedSyntaxError(InvalidInputError, ValueError):
    """A script this reader cannot follow; the message says where."""


@dataclass
class SedScript:
    """What a sed script does beyond printing: files it reads and writes, and commands it runs.

    ``runs`` holds each ``e COMMAND`` text; ``runs_pattern_space`` is set for ``e`` without a command and
    ``s///e``, which run text only known while sed runs. ``print_only`` means the script uses nothing but
    addresses and printing commands (``p``, ``=``, ``l``, ``q``…).
    """

    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    runs_pattern_space: bool = False
    print_only: bool = True


def read_sed_script(text: str) -> SedScript:
    """Read a whole script (several ``-e`` expressions joined by newlines); raises ``SedSyntaxError``."""
    reader = _Reader(text)
    reader.script()
    return reader.result


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.result = SedScript()
        self.depth = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def take(self) -> str:
        ch = self.peek()
        self.at += 1
        return ch

    def fail(self, message: str) -> SedSyntaxError:
        return SedSyntaxError(f"{message} at character {self.at + 1} of the sed script")

    def skip_blanks(self, newlines: bool = True) -> None:
        while self.peek() and (self.peek() in " \t" or (newlines and self.peek() in "\n;")):
            self.at += 1

    def rest_of_line(self) -> str:
        end = self.text.find("\n", self.at)
        end = len(self.text) if end < 0 else end
        value = self.text[self.at : end]
        self.at = end
        return value

    def script(self) -> None:
        while True:
            self.skip_blanks()
            if not self.peek():
                break
            if self.peek() == "#":
                self.rest_of_line()
                continue
            self.command()
        if self.depth:
            raise self.fail("an unclosed '{'")

    def command(self) -> None:
        self.address()
        self.skip_blanks(newlines=False)
        while self.peek() == "!":
            self.at += 1
            self.skip_blanks(newlines=False)
        letter = self.take()
        if not letter:
            raise self.fail("an address without a command")
        if letter == "{":
            self.depth += 1
            return
        if letter == "}":
            if not self.depth:
                raise self.fail("an unmatched '}'")
            self.depth -= 1
            self.end_of_command()
            return
        if letter not in _PRINT_ONLY and letter not in "{}#:" and letter not in _LABELLED:
            self.result.print_only = False
        if letter == ":":
            label = self.label()
            if not label:
                raise self.fail("a ':' without a label")
            return
        if letter in _LABELLED:
            self.label()
            return
        if letter in _TEXT:
            self.text_argument()
            return
        if letter in _FILES_READ or letter in _FILES_WRITTEN:
            name = self.file_name(letter)
            (self.result.reads if letter in _FILES_READ else self.result.writes).append(name)
            return
        if letter == "e":
            command = self.rest_of_line().strip()
            if command:
                self.result.runs.append(command)
            else:
                self.result.runs_pattern_space = True
            return
        if letter in "qQlL":
            self.skip_blanks(newlines=False)
            while self.peek().isdigit():
                self.at += 1
            self.end_of_command()
            return
        if letter == "v":
            self.label()
            return
        if letter == "s":
            self.substitute()
            return
        if letter == "y":
            delimiter = self.delimiter("y")
            self.delimited(delimiter)
            self.delimited(delimiter)
            self.end_of_command()
            return
        if letter in _PLAIN:
            self.end_of_command()
            return
        raise self.fail(f"unknown sed command {letter!r}")

    def end_of_command(self) -> None:
        self.skip_blanks(newlines=False)
        ch = self.peek()
        if ch in ("", "\n", ";", "}", "#"):
            if ch in ("\n", ";"):
                self.at += 1
            return
        raise self.fail(f"unexpected {ch!r} after a command")

    def label(self) -> str:
        self.skip_blanks(newlines=False)
        start = self.at
        while self.peek() and self.peek() not in "\n;":
            self.at += 1
        return self.text[start : self.at].strip()

    def text_argument(self) -> None:
        # 'a text' runs to the end of the line; 'a\' continues over lines that end in a backslash.
        while self.peek():
            ch = self.take()
            if ch == "\\" and self.peek():
                self.at += 1
            elif ch == "\n":
                return

    def file_name(self, letter: str) -> str:
        self.skip_blanks(newlines=False)
        name = self.rest_of_line()
        if not name:
            raise self.fail(f"'{letter}' needs a file name")
        return name

    def address(self) -> None:
        if not self.one_address():
            return
        self.skip_blanks(newlines=False)
        if self.peek() == ",":
            self.at += 1
            self.skip_blanks(newlines=False)
            if self.peek() in "+~":
                self.at += 1
            if not self.one_address():
                raise self.fail("a ',' without a second address")

    def one_address(self) -> bool:
        ch = self.peek()
        if ch.isdigit():
            while self.peek().isdigit():
                self.at += 1
            if self.peek() == "~":
                self.at += 1
                while self.peek().isdigit():
                    self.at += 1
            return True
        if ch == "$":
            self.at += 1
            return True
        if ch in ("/", "\\"):
            self.at += 1
            delimiter = "/" if ch == "/" else self.take()
            if not delimiter or delimiter in "\n\\":
                raise self.fail("a bad regular expression delimiter")
            self.delimited(delimiter)
            while self.peek() in ("I", "M"):
                self.at += 1
            return True
        return False

    def delimiter(self, command: str) -> str:
        delimiter = self.take()
        if not delimiter or delimiter in "\n\\":
            raise self.fail(f"'{command}' needs a delimiter")
        return delimiter

    def delimited(self, delimiter: str) -> str:
        start = self.at
        while True:
            ch = self.take()
            if not ch:
                raise self.fail(f"an unterminated '{delimiter}'")
            if ch == "\\":
                if not self.take():
                    raise self.fail("a trailing backslash")
                continue
            if ch == delimiter:
                return self.text[start : self.at - 1]

    def substitute(self) -> None:
        delimiter = self.delimiter("s")
        self.delimited(delimiter)
        self.delimited(delimiter)
        while True:
            ch = self.peek()
            if ch in ("g", "p", "i", "I", "m", "M") or ch.isdigit():
                self.at += 1
            elif ch == "e":
                self.at += 1
                self.result.runs_pattern_space = True
            elif ch == "w":
                self.at += 1
                self.result.writes.append(self.file_name("w"))
                return
            else:
                break
        self.end_of_command()


def writes_to_a_file(script: SedScript) -> list[str]:
    """The files a script writes, without standard output and standard error."""
    return [name for name in script.writes if name not in _WRITE_SINKS]


@dataclass
class SedCall:
    expressions: list[Word]
    files: list[Word]
    script_files: list[Word]
    in_place: bool
    quiet: bool
    problem: str | None = None


_SED_OPTIONS = option_spec("-e --expression -f --file -l --line-length", glued="-i")


def sed_call(args: Sequence[Word]) -> SedCall:
    """GNU sed's options: ``-i`` takes an optional suffix glued to it (``-i.bak``, so ``-in`` is in-place with
    suffix ``n``, not ``-i -n``), ``-e``/``-f``/``-l`` take values; without ``-e`` or ``-f`` the first operand
    is the script."""
    parsed = parse_options(args, _SED_OPTIONS, "sed")
    call = SedCall(
        expressions=parsed.values("-e", "--expression"),
        files=list(parsed.operands),
        script_files=parsed.values("-f", "--file"),
        in_place=parsed.has("-i", "--in-place"),
        quiet=parsed.has("-n", "--quiet", "--silent"),
        problem=parsed.problem,
    )
    if not call.problem and not call.expressions and not call.script_files:
        if not call.files:
            call.problem = "sed without a script"
        else:
            call.expressions.append(call.files.pop(0))
    return call


def sed_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    call = sed_call(args)
    if call.problem:
        interpretation.problems.append(call.problem)
        return
    for value in call.script_files:
        interpretation.opens(value, write=False, role="sed script file")
    if call.script_files:
        # The commands of a script file are only known when sed reads it; 'e' and 'w' could be in it.
        interpretation.problems.append("sed -f runs a script file whose commands are not analysed here")
    for word in call.files:
        interpretation.opens(word, write=call.in_place, role="sed -i file" if call.in_place else "sed input")
    if any(not e.static for e in call.expressions):
        interpretation.problems.append("sed runs a script computed at run time")
        return
    try:
        script = read_sed_script("\n".join(e.text for e in call.expressions))
    except SedSyntaxError as exc:
        interpretation.problems.append(f"sed: {exc}")
        return
    for name in script.reads:
        interpretation.opens(Word(name), write=False, role="sed r file")
    for name in writes_to_a_file(script):
        interpretation.opens(Word(name), write=True, role="sed w file")
    for command in script.runs:
        interpretation.scripts.append(Word(command))
    if script.runs_pattern_space:
        interpretation.problems.append(
            "sed runs text from its input as a shell command (the e command or the s///e flag)"
        )
        interpretation.runs_unseen = True


_SED_SAFE_FLAGS = frozenset("nErsuz")
_SED_SAFE_LONG = frozenset(
    {"--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--debug"}
)


def sed_is_read_only(args: Sequence[Word]) -> bool:
    """``sed -n`` with a script of addresses and printing commands only (``sed -n '1,5p' f``,
    ``sed -n -e '/x/p' f``), no in-place editing, no script file, nothing but read-only options."""
    call = sed_call(args)
    if call.problem or call.in_place or call.script_files or not call.quiet:
        return False
    for word in args:
        text = word.text
        if not word.static or not text.startswith("-") or text == "-" or word in call.expressions:
            continue
        if text.startswith("--"):
            if text.partition("=")[0] not in (*_SED_SAFE_LONG, "--expression"):
                return False
        elif not set(text[1:].split("e", 1)[0]) <= _SED_SAFE_FLAGS:
            return False
    try:
        script = read_sed_script("\n".join(e.text for e in call.expressions))
    except SedSyntaxError:
        return False
    return script.print_only and not script.reads and not script.writes
