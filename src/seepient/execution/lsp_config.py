"""What starts each language server of a session, read from the ``lsp`` settings section. Kept apart from
``lsp_server.py`` so a session can hold its configuration without loading pygls and lsprotocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seepient.config.sections import LspSettings


@dataclass(frozen=True)
class LanguageServerConfig:
    """What starts one language's server: ``command`` (argv; a bare name is looked up on PATH, then next to
    this Python, where a virtual environment installs console scripts) and the extensions it serves."""

    language: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    sandbox: bool = True
    initialization_options: Mapping[str, Any] | None = None


def server_configs(settings: LspSettings) -> list[LanguageServerConfig]:
    """The enabled servers of the ``lsp`` settings section (defaults plus what the files add)."""
    return [
        LanguageServerConfig(
            language=name,
            command=tuple(server.command),
            extensions=tuple(e if e.startswith(".") else f".{e}" for e in server.extensions),
            sandbox=server.sandbox,
            initialization_options=server.initialization_options,
        )
        for name, server in settings.enabled_servers().items()
    ]


def server_for(servers: Sequence[LanguageServerConfig], path: str) -> LanguageServerConfig | None:
    """The server that serves ``path`` (by its extension, case-insensitively), or None."""
    suffix = Path(path).suffix.lower()
    return next((s for s in servers if suffix in (e.lower() for e in s.extensions)), None)
