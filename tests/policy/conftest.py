"""Fixtures for policy tests: a real workspace, a fake home with credential files, and a Seepient home."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from seepient.config.settings import PermissionSettings
from seepient.policy import PathGuard, PolicyEngine
from seepient.protocol import (
    ActionKind,
    FileChange,
    PreparedActionDraft,
    ReadAction,
    ShellCommand,
)

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"


def corpus(*parts: str) -> Path:
    """A file of the read-only conformance corpora; a missing corpus fails the test instead of skipping it."""
    path = SHARED.joinpath("corpora", *parts)
    if not path.exists():
        pytest.fail(
            f"conformance corpus missing: {path} (the 'shared' folder must sit beside the repository)"
        )
    return path


@dataclass
class Layout:
    root: Path
    workspace: Path
    home: Path
    seepient_home: Path

    def guard(self) -> PathGuard:
        return PathGuard(self.workspace, seepient_home=self.seepient_home, home=self.home)

    def engine(self, mode: str = "ask-untrusted", **permissions: list[str]) -> PolicyEngine:
        return PolicyEngine(
            self.workspace,
            seepient_home=self.seepient_home,
            mode=mode,
            permissions=PermissionSettings(**permissions),
            home=self.home,
        )


def build_layout(root: Path) -> Layout:
    workspace = root / "ws"
    home = root / "home"
    seepient_home = home / ".seepient"
    for directory in (
        workspace / "src",
        workspace / ".seepient" / "hooks",
        home / ".ssh",
        home / ".aws",
        seepient_home,
    ):
        directory.mkdir(parents=True)
    (workspace / "README.md").write_text("hello\n")
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / ".env").write_text("TOKEN=secret\n")
    (workspace / ".seepient" / "settings.json").write_text("{}\n")
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / ".aws" / "credentials").write_text("[default]\n")
    (home / ".bashrc").write_text("# rc\n")
    (seepient_home / "settings.json").write_text("{}\n")
    (root / "outside").mkdir()
    (root / "outside" / "notes.txt").write_text("outside\n")
    return Layout(root, workspace, home, seepient_home)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return build_layout(tmp_path)


@pytest.fixture(scope="session")
def layout_factory() -> Callable[[Path], Layout]:
    return build_layout


def shell(command: str, cwd: Path | str) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind=ActionKind.SHELL,
        payload=ShellCommand(command=command, cwd=str(cwd)),
        read_only=False,
        summary=command[:80],
    )


def read(*paths: str, operation: str = "read_file") -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="read_file" if operation == "read_file" else operation,
        kind=ActionKind.READ,
        payload=ReadAction(operation=operation, paths=paths),  # type: ignore[arg-type]
        read_only=True,
        summary="read",
    )


def edit(path: str, *, new_content: str | None = None, tool: str = "edit_file") -> PreparedActionDraft:
    from seepient.protocol import EditBlock

    payload = (
        FileChange(path=path, pre_image_sha256=None, new_content=new_content)
        if new_content is not None
        else FileChange(path=path, pre_image_sha256="0" * 64, edits=(EditBlock(search="a", replace="b"),))
    )
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool=tool,
        kind=ActionKind.FILE_CHANGE,
        payload=payload,
        read_only=False,
        summary="edit",
    )


@dataclass(frozen=True)
class Actions:
    """Builders for prepared actions, handed to tests as a fixture (test modules cannot import conftest)."""

    workspace: Path

    def shell(self, command: str, cwd: Path | str | None = None) -> PreparedActionDraft:
        return shell(command, cwd if cwd is not None else self.workspace)

    read = staticmethod(read)
    edit = staticmethod(edit)


@pytest.fixture
def actions(layout: Layout) -> Actions:
    return Actions(layout.workspace)


@pytest.fixture(name="corpus")
def corpus_fixture() -> Callable[..., Path]:
    return corpus


@pytest.fixture(scope="session")
def corpus_finder() -> Callable[..., Path]:
    """``corpus`` for fixtures wider than one test."""
    return corpus
