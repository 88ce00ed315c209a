"""The tree-sitter-bash parser (one, shared under a lock), small questions asked of its nodes, and the
characters a word node stands for."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from seepient.shell.expansion import Chars, decode_ansi_c, unescape_double_quoted, unescape_unquoted

SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})

_parser: Parser | None = None
_parser_lock = threading.Lock()


def parse_tree(source: bytes) -> Node:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = Parser(Language(tree_sitter_bash.language()))
        return _parser.parse(source).root_node


def node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


_ALWAYS_TRUE = frozenset({"true", ":", "[ 1 ]", "[[ 1 ]]", "((1))", "(( 1 ))"})


def between(node: Node, opening: str, closing: str) -> str | None:
    """The source text between the first ``opening`` and the last ``closing`` token among a node's children."""
    first = next((c for c in node.children if not c.is_named and c.type == opening), None)
    last = next((c for c in reversed(node.children) if not c.is_named and c.type == closing), None)
    if first is None or last is None or last.start_byte < first.end_byte:
        return None
    text = node.text or b""
    return text[first.end_byte - node.start_byte : last.start_byte - node.start_byte].decode(
        "utf-8", "surrogateescape"
    )


def quoted_heredoc(node: Node) -> bool:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    return start is not None and any(ch in node_text(start) for ch in "'\"\\")


def endless_background_loop(node: Node) -> bool:
    """``while true; do x & done``: a loop nothing ends that starts a process on every turn."""
    conditions = [c for c in node.children_by_field_name("condition") if c.is_named]
    if len(conditions) != 1 or node_text(conditions[0]).strip() not in _ALWAYS_TRUE:
        return False
    body = node.child_by_field_name("body")
    return body is not None and any(not child.is_named and child.type == "&" for child in descendants(body))


def substitutions(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in SUBSTITUTIONS:
            yield current
            continue
        stack.extend(reversed(current.children))


def substitutions_accounted(body: Node) -> bool:
    """Whether every backquote and '$(' in an unquoted heredoc body belongs to a substitution the parser found.

    tree-sitter-bash misses some (backquotes around line continuations, for one); bash runs them all.
    """
    text = node_text(body)
    found = list(substitutions(body))
    backquoted = sum(1 for sub in found if sub.child_count and sub.children[0].type == "`")
    dollar_parens = sum(1 for sub in found if sub.child_count and sub.children[0].type == "$(")
    arithmetic = sum(1 for node in descendants(body) if node.type == "arithmetic_expansion")
    if text.count("`") - text.count("\\`") != 2 * backquoted:
        return False
    return len(re.findall(r"(?<!\\)\$\(", text)) <= dollar_parens + arithmetic


def descendants(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def has_expansion(node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("simple_expansion", "expansion", "arithmetic_expansion", *SUBSTITUTIONS):
            return True
        stack.extend(current.children)
    return False


def word_chars(node: Node, problem: Callable[[str], None]) -> Chars | None:
    """The characters a word node stands for, each with whether it was quoted; None when an expansion makes it
    known only at run time. ``problem`` hears of what cannot be read."""
    kind = node.type
    text = node_text(node)
    if kind in ("word", "number"):
        chars = unescape_unquoted(text)
        if chars is None:
            # tree-sitter-bash sometimes glues the next word or line onto a word ('{ {', 'EOF⏎\\)').
            problem(f"the parser read separate words as one: {text[:60]!r}")
        return chars
    if kind == "raw_string":
        return [(c, True) for c in text[1:-1]]
    if kind == "ansi_c_string":
        decoded = decode_ansi_c(text[2:-1])
        return None if decoded is None else [(c, True) for c in decoded]
    if kind == "string":
        if any(c.is_named and c.type != "string_content" for c in node.children):
            return None
        return [(c, True) for c in unescape_double_quoted(text[1:-1])]
    if kind == "concatenation":
        result: Chars = []
        for child in node.children:
            part = word_chars(child, problem)
            if part is None:
                return None
            result.extend(part)
        return result
    if kind == "brace_expression":
        return [(c, False) for c in text]
    if kind in (
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
    ):
        return None
    problem(f"unsupported word {kind!r}: {text[:60]}")
    return None
