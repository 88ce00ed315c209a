"""How tools ask whether a path may be touched before they read it for preparation."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from seepient.protocol.errors import RefusalError
from seepient.protocol.frozen import deferred_config


class PathDenied(RefusalError):
    """A path the guard refuses. ``rule`` names the check, ``reason`` is for the person and the model."""

    def __init__(self, path: str, reason: str, rule: str = "path_guard") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.rule = rule


class ResolvedPath(BaseModel):
    """``absolute`` has every symlink and ``..`` resolved; ``relative`` is set when it is inside the workspace."""

    model_config = deferred_config(frozen=True, extra="forbid")

    requested: str
    absolute: str
    relative: str | None


class PathAccess(Protocol):
    def for_read(self, path: str) -> ResolvedPath:
        """Raise ``PathDenied`` if reading ``path`` is refused."""
        ...

    def for_write(self, path: str) -> ResolvedPath:
        """Raise ``PathDenied`` if writing ``path`` is refused."""
        ...
