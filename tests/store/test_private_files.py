"""The SQLite database (conversations, token hashes, grants) and its -wal and -shm files are 0600 whatever
the umask, from the moment they exist; a database an older version left readable is narrowed on open."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from seepient.store import Store, database_url


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o022, 0o002, 0o000])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The umask a careless shell profile may leave (0 makes every new file world-writable)."""
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


async def test_the_database_and_its_wal_and_shm_are_0600(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "home"
    store = await Store.open(database_url(None, home))
    try:
        await store.create_token("alice")
        await store.create_session(
            session_id="ses_1", principal="alice", workspace="/w", model="m", mode="auto"
        )
        await store.start_turn("ses_1", "turn_1", "a conversation nobody else may read")
        await store.add_grant("ses_1", "rule", "Shell(make)")
        files = {path.name: _mode(path) for path in home.iterdir()}
    finally:
        await store.aclose()
    assert {"seepient.db", "seepient.db-wal", "seepient.db-shm"} <= set(files), files
    assert {name: mode for name, mode in files.items() if mode != 0o600} == {}
    assert _mode(home) == 0o700


async def test_a_readable_database_from_before_is_narrowed_on_open(tmp_path: Path) -> None:
    database = tmp_path / "seepient.db"
    first = await Store.open(database_url(None, tmp_path))
    await first.create_token("alice")
    await first.aclose()
    for path in (database, tmp_path / "seepient.db-wal", tmp_path / "seepient.db-shm"):
        if path.exists():
            os.chmod(path, 0o644)
    second = await Store.open(database_url(None, tmp_path))
    try:
        await second.create_token("bob")
        assert {p.name: _mode(p) for p in tmp_path.iterdir() if p.name.startswith("seepient.db")} == {
            p.name: 0o600 for p in tmp_path.iterdir() if p.name.startswith("seepient.db")
        }
    finally:
        await second.aclose()


async def test_a_database_named_on_the_command_line_is_private_too(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "elsewhere" / "server.sqlite"
    store = await Store.open(database_url(f"sqlite:///{path}", tmp_path))
    try:
        await store.create_token("alice")
        assert _mode(path) == 0o600 and _mode(path.with_name("server.sqlite-wal")) == 0o600
    finally:
        await store.aclose()


def test_memory_notes_and_the_knowledge_index_are_0600(tmp_path: Path, umask: int) -> None:
    """Seepient's other state under its home: notes the agent keeps (they may quote the user) and the index of
    a workspace's files."""
    from seepient.context.knowledge import KnowledgeIndex
    from seepient.execution.memory_folders import commit_memory
    from seepient.protocol import FileChange
    from seepient.protocol.actions import MemoryAction

    home, workspace = tmp_path / "seepient-home", tmp_path / "ws"
    workspace.mkdir()
    action = MemoryAction(
        command="create",
        scope="user",
        path="notes.md",
        change=FileChange(path="notes.md", pre_image_sha256=None, new_content="the user said hi\n"),
    )
    outcome = commit_memory(home, workspace, action)
    assert outcome.ok, outcome
    notes = [p for p in home.rglob("notes.md")]
    assert notes and all(_mode(p) == 0o600 for p in notes)
    index = KnowledgeIndex(home / "knowledge" / "index.db", writable=True)
    index._db.close()
    assert _mode(home / "knowledge" / "index.db") == 0o600
