"""Where Seepient keeps its own state: ``$SEEPIENT_HOME`` or ``~/.seepient``, and the project's ``.seepient/``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SeepientPaths:
    home: Path

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> SeepientPaths:
        env = os.environ if environ is None else environ
        raw = env.get("SEEPIENT_HOME")
        home = Path(raw).expanduser() if raw else Path.home() / ".seepient"
        return cls(home=home.absolute())

    @property
    def user_settings(self) -> Path:
        return self.home / "settings.json"

    @property
    def audit_log(self) -> Path:
        return self.home / "audit.log"

    @staticmethod
    def project_dir(workspace: Path) -> Path:
        return workspace / ".seepient"

    @staticmethod
    def project_settings(workspace: Path) -> Path:
        return workspace / ".seepient" / "settings.json"
