"""Redirections as the walker reads them: ``> file``, ``2>&1``, ``<&-``, herestrings and heredocs (whose
unquoted bodies run substitutions, and whose node can carry the rest of the line), each turned into the file
it opens or the text it feeds the command."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from seepient.shell.interpretation import Operand, Word
from seepient.shell.syntax_tree import has_expansion, node_text, substitutions_accounted

REDIRECT_TYPES = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>"})


@dataclass
class Redirect:
    """One redirection of a command: its operator, target and descriptor, the file it opens, or the text it
    feeds the command (a heredoc or herestring body)."""

    operator: str
    target: str
    fd: int | None
    operand: Operand | None = None
    stdin_text: Word | None = None  # a heredoc or herestring body fed to the command


class RedirectionReader:
    """Mixed into the walker, which supplies ``problem``, ``words``, ``scan`` and ``statement``."""

    def problem(self, message: str) -> None:
        raise NotImplementedError

    def words(self, node: Node) -> list[Word]:
        raise NotImplementedError

    def scan(self, node: Node) -> None:
        raise NotImplementedError

    def statement(self, node: Node, *, redirects: tuple[Redirect, ...], piped: bool) -> None:
        raise NotImplementedError

    def redirect(self, node: Node) -> list[Redirect]:
        if node.type == "file_redirect":
            return [self.file_redirect(node)]
        if node.type == "herestring_redirect":
            value = next((c for c in node.named_children), None)
            if value is None:
                return [Redirect("<<<", "", None)]
            words = self.words(value)
            body = words[0] if len(words) == 1 else Word(node_text(value), static=False)
            return [Redirect("<<<", body.text, None, stdin_text=body)]
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
        self.problem(f"unsupported redirection {node.type!r}")
        return []

    def file_redirect(self, node: Node) -> Redirect:
        fd_node = node.child_by_field_name("descriptor")
        fd = int(node_text(fd_node)) if fd_node is not None and node_text(fd_node).isdigit() else None
        operator = next((c.type for c in node.children if not c.is_named), "")
        destinations = node.children_by_field_name("destination")
        if operator in (">&-", "<&-") or not destinations:
            words = [w for d in destinations for w in self.words(d)]
            if any(w.text for w in words):
                self.problem(f"an unusual redirection {node_text(node)!r}")
            return Redirect(operator, "", fd)  # '2>&-' closes a descriptor
        words: list[Word] = []
        for destination in destinations:
            words.extend(self.words(destination))
        target = (
            words[0] if len(words) == 1 else Word(" ".join(node_text(d) for d in destinations), static=False)
        )
        if operator in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
            return Redirect(operator, target.text, fd)
        if operator == ">&" and (not target.static or any(ch in target.text for ch in "$`\\'\"")):
            # bash turns '>&word' into '&>word' and expands the word's value a second time.
            self.problem(
                "bash expands the target of '>&' a second time when it is no number, which runs code in it: "
                f"{target.text!r}"
            )
        write = operator in _WRITE_OPERATORS or operator == ">&"
        if operator == "<&":
            self.problem(f"'<&{target.text}' duplicates a descriptor that is not a number")
        role = "redirection target" if write else "redirection source"
        return Redirect(operator, target.text, fd, operand=Operand(target, write=write, role=role))

    def heredoc(self, node: Node) -> list[Redirect]:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        delimiter = node_text(start) if start is not None else ""
        quoted = any(ch in delimiter for ch in "'\"\\")
        operator = next((c.type for c in node.children if not c.is_named and c.type.startswith("<<")), "<<")
        body_node = next((c for c in node.children if c.type == "heredoc_body"), None)
        result: list[Redirect] = []
        body_text = ""
        static = True
        if body_node is not None:
            body_text = node_text(body_node)
            if not quoted:
                self.scan(body_node)
                static = not has_expansion(body_node)
                if not substitutions_accounted(body_node):
                    self.problem(
                        "a heredoc body runs commands the parser did not find; quote the delimiter ('EOF')"
                    )
                body_text = re.sub(r"\\\n", "", body_text)
            if operator == "<<-":
                body_text = "\n".join(line.lstrip("\t") for line in body_text.split("\n"))
        bare = delimiter.strip("'\"").replace("\\", "")
        result.append(Redirect(operator, bare, None, stdin_text=Word(body_text, static=static)))
        for child in node.named_children:
            if child.type == "file_redirect":
                result.append(self.file_redirect(child))
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            else:
                # The rest of the line after '<<EOF' ('| sh', '&& rm x') lands inside the heredoc node.
                self.statement(child, redirects=(), piped=True)
        return result
