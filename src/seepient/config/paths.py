"""Where Seepient keeps its own state: ``$SEEPIENT_HOME`` or ``~/.seepient``, and the project's ``.seepient/``."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from seepient._locations import seepient_home

MemoryScope = Literal["user", "project"]


def workspace_id(workspace: Path) -> str:
    """A stable, file-name-safe id for a workspace: its folder name plus a hash of its resolved path.

    Per-workspace state (project memory, the knowledge index) lives under ``$SEEPIENT_HOME`` by this id, not
    inside the repository, so a cloned repository cannot plant memories or a pre-built index.
    """
    resolved = os.path.realpath(workspace)
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(resolved)).strip(".-")[:40] or "root"
    return f"{name}-{digest}"


@dataclass(frozen=True)
class SeepientPaths:
    home: Path

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> SeepientPaths:
        return cls(home=Path(seepient_home(os.environ if environ is None else environ)).absolute())

    @property
    def user_settings(self) -> Path:
        return self.home / "settings.json"

    @property
    def audit_log(self) -> Path:
        return self.home / "audit.log"

    @property
    def trust_store(self) -> Path:
        """The workspaces the user trusts, each with the SHA-256 of the project settings it trusted."""
        return self.home / "trusted-projects.json"

    def workspace_rules(self, workspace: Path, principal: str | None = None) -> Path:
        """The user's own rules for one workspace: the "always for this project" answers.

        They live here, not in the repository, because they are the user's decision; a server keeps one file
        per principal, so one person's answer never speaks for another."""
        folder = self.home / "projects" / workspace_id(workspace)
        if principal is not None:
            digest = hashlib.sha256(principal.encode("utf-8", "surrogateescape")).hexdigest()[:16]
            folder = folder / "principals" / digest
        return folder / "settings.json"

    @property
    def audit_signing_key(self) -> Path:
        """The key that signs the audit log's head checkpoints; its public key is beside it as ``.pub``."""
        return self.home / "keys" / "audit-signing.key"

    @staticmethod
    def project_dir(workspace: Path) -> Path:
        return workspace / ".seepient"

    @staticmethod
    def project_settings(workspace: Path) -> Path:
        return workspace / ".seepient" / "settings.json"

    def memory_dir(self, scope: MemoryScope, workspace: Path) -> Path:
        """The agent's memory folder: ``memory/user`` for every workspace, ``memory/projects/<id>`` for one."""
        if scope == "user":
            return self.home / "memory" / "user"
        return self.home / "memory" / "projects" / workspace_id(workspace)

    def knowledge_index(self, workspace: Path) -> Path:
        """The knowledge index ``seepient knowledge index`` builds for ``workspace`` (SQLite, FTS5)."""
        return self.home / "knowledge" / f"{workspace_id(workspace)}.sqlite"
