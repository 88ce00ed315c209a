"""Bash word evaluation on text: unquoting, ANSI-C strings, brace expansion, globs and directory-stack tildes.

Each character keeps whether it was quoted, since quoted characters never glob or brace-expand.
"""

from __future__ import annotations

import re

MAX_BRACE_WORDS = 256


Chars = list[tuple[str, bool]]  # each character with whether it was quoted (quoted ones never glob or brace)


def unescape_unquoted(text: str) -> Chars | None:
    """Unquote a bare word; None when it holds a raw blank or newline, which bash never keeps in a bare word."""
    result: Chars = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":  # backslash-newline is a line continuation: both go
                result.append((text[index + 1], True))
            index += 2
            continue
        if ch in " \t\n":
            return None
        result.append((ch, False))
        index += 1
    return result


def unescape_double_quoted(text: str) -> str:
    # Inside double quotes a backslash escapes only $ ` " \ and newline (which it removes).
    out: list[str] = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)


_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def decode_ansi_c(body: str) -> str | None:
    """Decode a ``$'...'`` body to the bytes bash makes of it, cut at an encoded NUL as bash cuts the word.

    None when the result is not known here: ``\\u``/``\\U`` escapes beyond ASCII are encoded in the
    locale's character set (and left as written in the C locale), and bytes that are not UTF-8 are no text.
    """
    out = bytearray()
    index = 0
    while index < len(body):
        ch = body[index]
        if ch != "\\" or index + 1 >= len(body):
            out += ch.encode("utf-8", "surrogateescape")
            index += 1
            continue
        code = body[index + 1]
        index += 2
        if code in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[code].encode()
        elif code in "01234567":
            digits = re.match(r"[0-7]{0,2}", body[index:])
            value = code + (digits.group(0) if digits else "")
            index += len(value) - 1
            out.append(int(value, 8) & 0xFF)
        elif code in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[code]
            digits = re.match(f"[0-9a-fA-F]{{1,{limit}}}", body[index:])
            if not digits:
                out += b"\\" + code.encode()
                continue
            index += len(digits.group(0))
            value = int(digits.group(0), 16)
            if code != "x" and value >= 0x80:
                return None
            out.append(value)
        elif code == "c" and index < len(body):
            control = body[index]
            index += 1
            if not control.isascii():
                return None
            if control == "\\" and body[index : index + 1] == "\\":
                index += 1  # $'\c\\' is control-backslash: the second backslash belongs to it
            out.append(0x7F if control == "?" else ord(control) & 0x1F)
        else:
            out += ("\\" + code).encode("utf-8", "surrogateescape")
    try:
        return bytes(out).split(b"\x00", 1)[0].decode("utf-8")
    except UnicodeDecodeError:
        return None


_STACK_TILDE = re.compile(r"[+-]|[+-]?[0-9]+")


def names_a_directory_stack_entry(chars: Chars) -> bool:
    """``~+``, ``~-`` and ``~N`` expand to $PWD, $OLDPWD and the directory stack: folders known only at run
    time. bash expands them at the start of a word and after ``=`` or ``:`` in an assignment-like word."""
    text = "".join(c for c, _ in chars)
    if "~" not in text:
        return False
    starts = [0]
    equals = text.find("=")
    if equals > 0 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text[:equals]) and not chars[equals][1]:
        starts.extend(
            position + 1
            for position in range(equals, len(chars))
            if chars[position] in (("=", False), (":", False))
        )
    for start in starts:
        if start >= len(chars) or chars[start] != ("~", False):
            continue
        end = start + 1
        while end < len(chars) and chars[end] != ("/", False) and chars[end] != (":", False):
            end += 1
        prefix = chars[start + 1 : end]
        if not any(quoted for _, quoted in prefix) and _STACK_TILDE.fullmatch("".join(c for c, _ in prefix)):
            return True
    return False


def is_glob(chars: Chars) -> bool:
    for position, (ch, quoted) in enumerate(chars):
        if quoted:
            continue
        if ch in "*?":
            return True
        if ch == "[" and any(c == "]" and not q for c, q in chars[position + 1 :]):
            return True
    return False


def brace_expand(chars: Chars, budget: list[int] | None = None, depth: int = 0) -> list[Chars] | None:
    """bash brace expansion on unquoted braces: ``{a,b}`` and ``{1..3}``; None when it would make too many words."""
    budget = budget if budget is not None else [MAX_BRACE_WORDS]
    if depth > 64:
        return None
    for start, (ch, quoted) in enumerate(chars):
        if ch != "{" or quoted or (start > 0 and chars[start - 1] == ("$", False)):
            continue
        nesting = 0
        commas: list[int] = []
        end = None
        for position in range(start, len(chars)):
            c, q = chars[position]
            if q:
                continue
            if c == "{":
                nesting += 1
            elif c == "}":
                nesting -= 1
                if nesting == 0:
                    end = position
                    break
            elif c == "," and nesting == 1:
                commas.append(position)
        if end is None:
            continue
        prefix, body, suffix = chars[:start], chars[start + 1 : end], chars[end + 1 :]
        if commas:
            bounds = [start, *commas, end]
            alternatives = [chars[bounds[i] + 1 : bounds[i + 1]] for i in range(len(bounds) - 1)]
        else:
            sequence = _brace_sequence("".join(c for c, _ in body)) if not any(q for _, q in body) else None
            if sequence is None:
                continue
            alternatives = [[(c, True) for c in item] for item in sequence]
        results: list[Chars] = []
        for alternative in alternatives:
            expanded = brace_expand(prefix + alternative + suffix, budget, depth + 1)
            if expanded is None:
                return None
            results.extend(expanded)
            budget[0] -= len(expanded)
            if budget[0] < 0:
                return None
        return results
    return [chars]


def _brace_sequence(body: str) -> list[str] | None:
    match = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", body)
    if match:
        first, last = int(match.group(1)), int(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        if abs(last - first) // step > MAX_BRACE_WORDS:
            return None
        width = (
            max(len(match.group(1)), len(match.group(2)))
            if match.group(1).lstrip("-").startswith("0") or match.group(2).lstrip("-").startswith("0")
            else 0
        )
        values = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
        return [str(v).zfill(width) if width else str(v) for v in values]
    match = re.fullmatch(r"([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?", body)
    if match:
        first, last = ord(match.group(1)), ord(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        values = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
        return [chr(v) for v in values]
    return None
