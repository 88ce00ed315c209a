"""A language-server question about one file and its answer, as a tool asks them through the host reads."""

from __future__ import annotations

from typing import Literal

from seepient.protocol.errors import ExecutionError
from seepient.protocol.frozen import FrozenModel


class LspQuery(FrozenModel):
    """One language-server question about ``path`` (absolute, resolved by the path guard). ``line`` and
    ``character`` are 0-based as in LSP; the tool converts from the model's 1-based numbers."""

    operation: Literal["diagnostics", "definition", "references", "hover", "document_symbols"]
    path: str
    line: int = 0
    character: int = 0


class LspLocation(FrozenModel):
    """A place in a file, 0-based as in LSP; ``path`` is absolute. ``name``/``kind``/``depth`` describe a
    symbol, ``message``/``severity``/``source`` a diagnostic."""

    path: str
    line: int
    character: int
    end_line: int | None = None
    end_character: int | None = None
    name: str = ""
    kind: str = ""
    depth: int = 0
    message: str = ""
    severity: str = ""
    source: str = ""


class LspAnswer(FrozenModel):
    """The server's answer: ``locations`` for definition, references, symbols and diagnostics, ``text`` for
    hover. ``server`` names the configured language."""

    operation: str
    server: str
    locations: tuple[LspLocation, ...] = ()
    text: str = ""


class LspUnavailable(ExecutionError, RuntimeError):
    """No language server can answer (none configured for the file, it failed to start or died); the message
    says why and how to fix it. The session goes on without it."""
