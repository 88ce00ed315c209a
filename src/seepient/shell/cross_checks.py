"""Where tree-sitter-bash and bash would read a line differently: each check finds text the parser dropped,
glued or split, so a line is refused rather than analysed as something other than what bash runs.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from seepient.shell.options import name_set
from seepient.shell.syntax_tree import node_text


def first_error(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR":
            return repr(node_text(node)[:60])
        if node.is_missing:
            return f"missing {node.type!r} near byte {node.start_byte}"
        stack.extend(reversed(node.children))
    return "(unknown position)"


def _inside_token(root: Node, at: int) -> bool:
    node = root.descendant_for_byte_range(at, at + 1)
    return (
        node is not None
        and node.start_byte <= at < node.end_byte
        and (
            node.child_count == 0 or node.type in ("string", "heredoc_body", "raw_string", "comment", "word")
        )
    )


def _dropped_blank_escape(source: bytes, root: Node) -> bool:
    """tree-sitter-bash skips a backslash-blank between tokens as white space; bash makes it a word
    character (``\\ rm`` runs a program named `` rm``), so the two would disagree about the words."""
    return any(not _inside_token(root, m.start()) for m in re.finditer(rb"\\[ \t\v\f]", source))


# Bytes that end a bash word. Two tokens that touch without one of these between them are one word to
# bash, whatever tree-sitter made of them.
_METACHARACTERS = frozenset(b" \t\n|&;()<>")
# Parents whose children are separate words, operators or statements (not parts of one word).
_WORD_LISTS = name_set(
    "program list pipeline command command_name redirected_statement negated_command compound_statement "
    "subshell do_group if_statement elif_clause else_clause while_statement for_statement case_statement "
    "case_item declaration_command unset_command function_definition file_redirect heredoc_redirect "
    "herestring_redirect variable_assignments"
)


# Word-level nodes whose children are parts of one word: bash allows nothing between them.
_ONE_WORD = frozenset({"concatenation", "simple_expansion", "variable_assignment"})
_FD = re.compile(rb"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _structural_disagreement(source: bytes, root: Node) -> str | None:
    """Shapes bash cannot produce, so tree-sitter-bash must have read the line differently from bash."""
    stack = [(root, False)]
    while stack:
        node, in_expansion = stack.pop()
        # Each read of a node's children or text builds new objects: read them once, the text only to report.
        children = node.children
        kind = node.type
        stack.extend((child, in_expansion or kind == "expansion") for child in children)
        found = _node_disagreement(source, node, kind, children, in_expansion)
        if found is not None:
            return found
    return None


def _node_disagreement(
    source: bytes, node: Node, kind: str, children: list[Node], in_expansion: bool
) -> str | None:
    if node.start_byte == node.end_byte and not node.is_named and kind and not node.is_missing:
        return f"the parser invented a {kind!r} that is not in the line"
    if kind in ("word", "number") and not in_expansion and _has_raw_blank(node.text or b""):
        return f"the parser read separate words as one: {_shown(node)!r}"
    if kind == "test_command" and not _test_brackets_stand_alone(source, node):
        return f"the parser read {_shown(node)!r} as a test, but bash reads its brackets as part of a word"
    if kind == "file_descriptor" and _FD.fullmatch(node.text or b"") is None:
        return f"the parser read {_shown(node)!r} as a file descriptor"
    if kind == "file_redirect" and len(node.children_by_field_name("destination")) > 1:
        return f"the parser gave one redirection several targets: {_shown(node)!r}"
    if kind == "variable_assignment":
        name = node.child_by_field_name("name")
        if name is not None and name.type == "variable_name" and _NAME.fullmatch(name.text or b"") is None:
            return f"the parser read {_shown(node)!r} as an assignment; bash runs it as a command"
    if kind == "comment" and node.start_byte > 0 and source[node.start_byte - 1] not in _METACHARACTERS:
        return f"the parser started a comment inside a word: {_shown(node)!r}"
    pairs = zip(children, children[1:], strict=False)
    if kind in _ONE_WORD:
        if any(before.end_byte != after.start_byte for before, after in pairs):
            return f"the parser read separate words as one: {_shown(node)!r}"
        return None
    if kind not in _WORD_LISTS:
        return None
    for before, after in pairs:
        if before.end_byte != after.start_byte or before.end_byte == before.start_byte:
            continue
        if after.end_byte == after.start_byte or after.type == "heredoc_body":
            continue
        if _is_operator(before) or _is_operator(after):
            continue  # '<<-EOF': bash splits operators from words whatever touches them
        if (source[before.end_byte - 1] not in _METACHARACTERS or _closes_a_substitution(before)) and source[
            after.start_byte
        ] not in _METACHARACTERS:
            return f"the parser split one shell word in two: {source[before.start_byte : after.end_byte].decode('utf-8', 'replace')[:60]!r}"
    return None


def _shown(node: Node) -> str:
    """The start of a node's text, as a refusal quotes it."""
    return (node.text or b"").decode("utf-8", "replace")[:60]


def _closes_a_substitution(node: Node) -> bool:
    """Whether ``node`` ends with the ``)`` of a substitution, which ends no word: ``<<< $(c)x`` is one word."""
    last = node
    while last.child_count:
        last = last.children[-1]
    parent = last.parent
    return (
        last.type in (")", "))")
        and parent is not None
        and parent.type in ("command_substitution", "process_substitution", "arithmetic_expansion")
    )


def _test_brackets_stand_alone(source: bytes, node: Node) -> bool:
    """``[ … ]`` and ``[[ … ]]`` are words of their own to bash: ``[x]`` runs a program named ``[x]``."""
    children = node.children
    if not children or children[0].is_named or len(children) < 2:
        return True
    opening, closing = children[0], children[-1]
    after = source[opening.end_byte : opening.end_byte + 1]
    before = source[closing.start_byte - 1 : closing.start_byte] if closing.start_byte > 0 else b""
    return after in (b" ", b"\t", b"\n") and (
        closing.is_named or closing.start_byte == closing.end_byte or before in (b" ", b"\t", b"\n")
    )


def _is_operator(node: Node) -> bool:
    return not node.is_named and any(byte in _METACHARACTERS for byte in (node.text or b""))


def _has_raw_blank(text: bytes) -> bool:
    escaped = False
    for byte in text:
        if escaped:
            escaped = False
        elif byte == 0x5C:
            escaped = True
        elif byte in b" \t\n":
            return True
    return False


def tokenization_disagreement(source: bytes, root: Node) -> str | None:
    """Cross-checks of tree-sitter-bash's tokens against bash's own word rules.

    Each check exists because the parser was caught (by running real bash on fuzzed lines) reading a
    line in a way that hides or renames a command without reporting an error.
    """
    if _dropped_blank_escape(source, root):
        return "a backslash-escaped blank between words, which bash keeps as part of a word"
    structural = _structural_disagreement(source, root)
    if structural is not None:
        return structural
    skipped = _uncovered_text(source, root)
    if skipped is not None:
        at, text = skipped
        if source[at] in _WORD_CONTROLS:
            return (
                f"a {_WORD_CONTROLS[source[at]]} outside quotes in {text!r}: bash keeps it inside a word, where the "
                "parser reads it as a space"
            )
        return f"the parser skipped part of the line: {text!r}"
    return None


# bash splits words only at space, tab and newline; these belong to the word they touch.
_WORD_CONTROLS = {0x0D: "carriage return", 0x0B: "vertical tab", 0x0C: "form feed"}


_WHOLE_TOKENS = frozenset(
    {"string", "raw_string", "ansi_c_string", "heredoc_body", "comment", "translated_string"}
)


def _covered(root: Node, size: int) -> bytearray:
    """One flag per source byte: whether some token of the tree holds it."""
    covered = bytearray(size)
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type in _WHOLE_TOKENS:
            covered[node.start_byte : node.end_byte] = b"\x01" * (node.end_byte - node.start_byte)
            continue
        stack.extend(node.children)
    return covered


def _uncovered_text(source: bytes, root: Node) -> tuple[int, str] | None:
    """Text that belongs to no token, with its position. tree-sitter-bash occasionally drops a word without
    an error (``- fi=`` parses as the assignment ``fi=``), and it skips a carriage return as blank space;
    bash would run what it dropped, so such a line is not trusted."""
    covered = _covered(root, len(source))
    for index, byte in enumerate(source):
        if covered[index] or byte in b" \t\n":
            continue
        if byte == 0x5C and source[index + 1 : index + 2] in (b"\n", b" ", b"\t", b"\v", b"\f"):
            continue  # a line continuation or an escaped blank, handled on their own
        return index, source[max(0, index - 10) : index + 20].decode("utf-8", "replace")
    return None


def quote_dropped_dashes(source: bytes, root: Node) -> bytes | None:
    """Quote a lone ``-`` word that tree-sitter-bash dropped (it does before a heredoc: ``python3 - <<'PY'``).

    ``'-'`` is the same word to bash, and tree-sitter keeps it; any other dropped text stays an error.
    """
    if b" - " not in b" " + source.replace(b"\t", b" ").replace(b"\n", b" ") + b" ":
        return None  # no lone '-' word at all, so none was dropped
    covered = _covered(root, len(source))
    cut = [
        index
        for index, byte in enumerate(source)
        if byte == 0x2D
        and not covered[index]
        and (index == 0 or source[index - 1] in b" \t\n")
        and (index + 1 == len(source) or source[index + 1] in b" \t\n")
    ]
    if not cut:
        return None
    out = bytearray()
    previous = 0
    for index in cut:
        out += source[previous:index] + b"'-'"
        previous = index + 1
    out += source[previous:]
    return bytes(out)


def join_line_continuations(source: bytes, root: Node) -> bytes | None:
    """Remove backslash-newline pairs that sit between tokens, as bash does before it splits words.

    tree-sitter treats them as blank space, so ``l\\<newline>s`` would look like ``l`` with argument
    ``s`` while bash runs ``ls``. Pairs inside a token (a comment, quotes, a heredoc) are left alone.
    """
    cut: list[int] = []
    for match in re.finditer(rb"\\\n", source):
        if not _inside_token(root, match.start()):
            cut.append(match.start())
    if not cut:
        return None
    out = bytearray()
    previous = 0
    for at in cut:
        out += source[previous:at]
        previous = at + 2
    out += source[previous:]
    return bytes(out)


# -- unquoting ----------------------------------------------------------------------------------------
