"""Fixtures for the built-in tool tests: a real temporary workspace, the real path guard and the real local
executor (bubblewrap sandbox), with a recorder in front of the executor that proves what a tool touched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from seepient.context.knowledge import read_index
from seepient.execution.local import LocalExecutor
from seepient.policy.paths import PathGuard
from seepient.protocol import ApprovedAction, GrepOutcome, Outcome, PreparedActionDraft
from seepient.tools.base import Tool, ToolContext, ToolOutput
from tests.approved import approve


@dataclass
class RecordingExecutor:
    """Passes every read and every execution to the real executor and notes it, so a test can say "nothing
    was read" or "nothing was committed". It serves as both the context's reads and its executor."""

    inner: Any
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    async def read_file(self, path: str) -> bytes:
        self.calls.append(("read_file", (path,)))
        return await self.inner.reads.read_file(path)

    async def glob(self, root: str, pattern: str, **kwargs: Any) -> list[str]:
        self.calls.append(("glob", (root, pattern)))
        return await self.inner.reads.glob(root, pattern, **kwargs)

    async def grep(self, root: str, pattern: str, **kwargs: Any) -> GrepOutcome:
        self.calls.append(("grep", (root, pattern)))
        return await self.inner.reads.grep(root, pattern, **kwargs)

    async def execute(self, action: ApprovedAction) -> Outcome:
        self.calls.append(("execute", (action.payload.type, action.summary)))
        return await self.inner.execute(action)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        # Reads no test needs to watch (memory, language servers) go to the real host reads as they are.
        return getattr(self.inner.reads, name)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    (path / ".ssh").mkdir(parents=True)
    (path / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    return path


@pytest.fixture
def seepient_home(home: Path) -> Path:
    path = home / ".seepient"
    path.mkdir()
    (path / "settings.json").write_text('{"permissions": {"deny": []}}\n')
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a file no tool may read or change."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("outside the workspace\n")
    return path


@pytest.fixture
def traps(workspace: Path, outside: Path, home: Path, seepient_home: Path) -> dict[str, str]:
    """Symlinks planted inside the workspace that lead out of it: to the outside file and folder, a private
    key, the Seepient home and the key folder."""
    (workspace / "sub").mkdir()
    (workspace / "escape.txt").symlink_to(outside / "secret.txt")
    (workspace / "out").symlink_to(outside)
    (workspace / "innocent.txt").symlink_to(home / ".ssh" / "id_ed25519")
    (workspace / "cfg").symlink_to(seepient_home)
    (workspace / "keys").symlink_to(home / ".ssh")
    return {"outside": str(outside), "home": str(home), "seepient_home": str(seepient_home)}


@pytest.fixture
def executor(workspace: Path, seepient_home: Path, home: Path) -> Any:
    return LocalExecutor(
        workspace, sandbox="auto", seepient_home=seepient_home, home=home, knowledge_index=read_index
    )


@pytest.fixture
def recorder(executor: Any) -> RecordingExecutor:
    return RecordingExecutor(executor)


@pytest.fixture
def ctx(workspace: Path, seepient_home: Path, home: Path, recorder: RecordingExecutor) -> ToolContext:
    return ToolContext(
        workspace=workspace,
        session_id="ses_tools",
        call_id="call_1",
        paths=PathGuard(workspace, seepient_home=seepient_home, home=home),
        executor=recorder,
        reads=recorder,
        default_timeout_ms=30_000,
    )


Prepare = Callable[..., Awaitable[PreparedActionDraft]]
Run = Callable[..., Awaitable[tuple[PreparedActionDraft, ToolOutput]]]


@pytest.fixture
def prepare(ctx: ToolContext) -> Prepare:
    """Validate raw arguments against the tool's schema, as the pipeline does, then prepare."""

    async def _prepare(tool: Tool[Any], **arguments: Any) -> PreparedActionDraft:
        args = tool.input_model.model_validate(arguments)
        return await tool.prepare(args, ctx)

    return _prepare


@pytest.fixture
def run(ctx: ToolContext, prepare: Prepare) -> Run:
    async def _run(tool: Tool[Any], **arguments: Any) -> tuple[PreparedActionDraft, ToolOutput]:
        draft = await prepare(tool, **arguments)
        return draft, await tool.execute(approve(draft), ctx)

    return _run
