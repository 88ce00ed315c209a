"""The agent's memory folders: where they live and the grammar of the paths the ``memory`` tool accepts.

User memory is ``$SEEPIENT_HOME/memory/user``; project memory is ``$SEEPIENT_HOME/memory/projects/<workspace
id>`` (see ``workspace_id``), outside the repository, so a cloned repository cannot plant notes the agent
would then read as its own. The tool spells them ``/memories/user/...`` and ``/memories/project/...``.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from seepient.config.paths import MemoryScope, SeepientPaths
from seepient.protocol.errors import InvalidInputError

MEMORY_PREFIX = "/memories"
SCOPES: tuple[MemoryScope, ...] = ("project", "user")
MAX_DEPTH = 8
_NAME = re.compile(r"^\w[\w .,@+=()\[\]-]*$")


class MemoryPathError(InvalidInputError, ValueError):
    """A memory path that is not allowed; the message says why and what is."""


def memory_root(seepient_home: Path, workspace: Path, scope: MemoryScope) -> Path:
    return SeepientPaths(home=seepient_home).memory_dir(scope, workspace)


def memory_parts(path: str) -> list[str]:
    """The components of a path relative to a memory folder ('' is the folder), refusing all that could leave it.

    Refused: absolute paths, ``..`` and ``.``, empty components, NUL and control characters, backslashes,
    names starting with '.' (hidden files, the commit helper's temp names), '%' escapes, characters other
    than letters, digits and a few punctuation marks, and names whose Unicode compatibility form differs (a
    full-width dot is not let through to be read as a dot by anything downstream).
    """
    if path == "":
        return []
    if "\x00" in path or "\\" in path:
        raise MemoryPathError("memory paths may not contain NUL bytes or backslashes")
    if path.startswith("/"):
        raise MemoryPathError("the path must be relative to the memory folder")
    parts = path.split("/")
    if parts[-1] == "":
        parts = parts[:-1]
    for part in parts:
        if part in ("", ".", ".."):
            raise MemoryPathError(f"{path!r}: '..', '.' and empty components are not allowed in memory paths")
        if unicodedata.normalize("NFKC", part) != part:
            raise MemoryPathError(f"{part!r}: use plain characters (its Unicode compatibility form differs)")
        if not _NAME.match(part) or len(part.encode("utf-8")) > 200:
            raise MemoryPathError(
                f"{part!r}: memory file and folder names use letters, digits, spaces and . , @ + = ( ) [ ] - "
                "(not starting with '.' or punctuation, at most 200 bytes)"
            )
    if len(parts) > MAX_DEPTH:
        raise MemoryPathError(f"{path!r}: memory folders nest at most {MAX_DEPTH} levels deep")
    return parts


def split_memory_path(path: str) -> tuple[MemoryScope | None, str]:
    """``/memories/project/notes/a.md`` → ``("project", "notes/a.md")``; ``/memories`` → ``(None, "")``.

    Raises ``MemoryPathError`` for anything not under ``/memories/user`` or ``/memories/project``.
    """
    text = path.strip()
    if text.startswith("memories/") or text == "memories":
        text = "/" + text
    if text.rstrip("/") == MEMORY_PREFIX:
        return None, ""
    if not text.startswith(MEMORY_PREFIX + "/"):
        raise MemoryPathError(
            f"{path!r} is not a memory path: memory paths start with /memories/project/ (notes for this "
            "workspace) or /memories/user/ (notes for every workspace)"
        )
    rest = text[len(MEMORY_PREFIX) + 1 :]
    scope, _, inner = rest.partition("/")
    if scope not in SCOPES:
        raise MemoryPathError(f"{path!r}: the folder after /memories/ is 'project' or 'user', not {scope!r}")
    memory_parts(inner)
    return scope, inner.rstrip("/")  # type: ignore[return-value]


def display(scope: MemoryScope | None, path: str) -> str:
    """How the tool shows a memory path."""
    if scope is None:
        return MEMORY_PREFIX
    return f"{MEMORY_PREFIX}/{scope}/{path}" if path else f"{MEMORY_PREFIX}/{scope}"
