"""Fixtures for context tests: a workspace, a Seepient home, and writers for AGENTS.md files and skills."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

SkillWriter = Callable[..., Path]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def seepient_home(tmp_path: Path) -> Path:
    path = tmp_path / "seepient-home"
    path.mkdir()
    return path.resolve()


def write_skill_file(
    base: Path, directory: str, *, name: str | None = None, description: str = "Does a thing.", body: str = ""
) -> Path:
    """``base/<directory>/SKILL.md`` with front matter naming it ``name`` (default: the directory)."""
    folder = base / directory
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(
        f"---\nname: {name or directory}\ndescription: {description}\n---\n{body}", encoding="utf-8"
    )
    return path


@pytest.fixture
def workspace_skill(workspace: Path) -> SkillWriter:
    def write(directory: str, **kwargs: str) -> Path:
        return write_skill_file(workspace / ".agents" / "skills", directory, **kwargs)

    return write


@pytest.fixture
def user_skill(seepient_home: Path) -> SkillWriter:
    def write(directory: str, **kwargs: str) -> Path:
        return write_skill_file(seepient_home / "skills", directory, **kwargs)

    return write
