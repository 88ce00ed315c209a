"""The session writes on the standard library's sqlite3 write what ``Store`` writes, column for column, read
back the same through ``Store``, open only a database at the newest schema, and leave a failed write undone."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from seepient.store import Store, database_url
from seepient.store.session_writes import SqliteSessionWrites

_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}")
_TABLES = ("sessions", "turns", "messages", "grants")


async def _record_a_session(writes: Any) -> None:
    """The calls a recorded run makes: a session, two turns with a grant between, their histories."""
    await writes.create_session(session_id="s1", principal="local:me", workspace="/w", model="m", mode="auto")
    first = await writes.start_turn("s1", "t1", "hello é")
    assert (first.number, first.status, first.reply, first.reason) == (1, "running", "", None)
    await writes.add_grant("s1", "shell", "ls -la")
    history = [{"role": "user", "content": "hello é"}, {"role": "assistant", "content": [{"x": 1}]}]
    await writes.finish_turn("s1", "t1", status="completed", reason="final", reply="hi", messages=history)
    assert (await writes.start_turn("s1", "t2", "again")).number == 2
    await writes.finish_turn(
        "s1", "t2", status="interrupted", reason="interrupted", reply="", messages=history[:1]
    )


def _rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the session tables, each timestamp checked for SQLAlchemy's format and then blanked."""
    with sqlite3.connect(db) as raw:
        tables = {t: raw.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in _TABLES}
    for name, rows in tables.items():
        for i, row in enumerate(rows):
            for value in row:
                if isinstance(value, str) and value[:2] == "20":
                    assert _STAMP.fullmatch(value), (name, value)
            tables[name][i] = tuple(
                "<stamp>" if isinstance(v, str) and _STAMP.fullmatch(v) else v for v in row
            )
    return tables


async def _store(db: Path) -> Store:
    return await Store.open(database_url(f"sqlite:///{db}", db.parent))


async def test_the_rows_are_the_stores_column_for_column(tmp_path: Path) -> None:
    by_store, by_sqlite = tmp_path / "store.db", tmp_path / "sqlite.db"
    for db in (by_store, by_sqlite):
        await (await _store(db)).aclose()  # the schema, as every database is created
    store = await _store(by_store)
    try:
        await _record_a_session(store)
    finally:
        await store.aclose()
    writes = await SqliteSessionWrites.open(by_sqlite)
    assert writes is not None
    try:
        await _record_a_session(writes)
        assert await writes.get_session("s1", "someone else") is None
        mine = await writes.get_session("s1", "local:me")
        assert mine is not None and (mine.status, mine.created_at.tzinfo) == ("idle", mine.updated_at.tzinfo)
    finally:
        await writes.aclose()
    assert _rows(by_sqlite) == _rows(by_store)
    # And the store reads what the sqlite3 writes wrote exactly as it reads its own.
    for db in (by_store, by_sqlite):
        store = await _store(db)
        try:
            record = await store.get_session("s1", "local:me")
            assert record is not None and record.created_at.tzinfo is not None
            turns = [(t.number, t.status, t.reply, t.reason) for t in await store.turns("s1")]
            assert turns == [(1, "completed", "hi", "final"), (2, "interrupted", "", "interrupted")]
            assert await store.messages("s1") == [{"role": "user", "content": "hello é"}]
            assert await store.grants("s1") == [("shell", "ls -la")]
        finally:
            await store.aclose()


async def test_only_a_database_at_the_newest_schema_opens(tmp_path: Path) -> None:
    db = tmp_path / "seepient.db"
    assert await SqliteSessionWrites.open(db) is None, "no database yet: the store creates it"
    assert not db.exists()
    await (await _store(db)).aclose()
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '0002'")
    assert await SqliteSessionWrites.open(db) is None, "an older schema: the store migrates it"
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '0003'")
    writes = await SqliteSessionWrites.open(db)
    assert writes is not None
    await writes.aclose()
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert await SqliteSessionWrites.open(tmp_path / "junk.db") is None


async def test_a_failed_write_leaves_nothing_and_the_next_one_works(tmp_path: Path) -> None:
    db = tmp_path / "seepient.db"
    await (await _store(db)).aclose()
    writes = await SqliteSessionWrites.open(db)
    assert writes is not None
    try:
        await writes.create_session(session_id="s1", principal="p", workspace="/w", model="m", mode="auto")
        await writes.start_turn("s1", "t1", "one")
        with pytest.raises(sqlite3.IntegrityError):
            await writes.start_turn("s2", "t2", "a session that does not exist")  # the foreign key
        with pytest.raises(sqlite3.IntegrityError):
            await writes.start_turn("s1", "t1", "the same turn again")
        assert (await writes.start_turn("s1", "t3", "three")).number == 2
    finally:
        await writes.aclose()
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT id, number FROM turns ORDER BY number").fetchall() == [
            ("t1", 1),
            ("t3", 2),
        ]


async def test_the_database_file_stays_private(tmp_path: Path) -> None:
    db = tmp_path / "seepient.db"
    await (await _store(db)).aclose()
    db.chmod(0o644)
    writes = await SqliteSessionWrites.open(db)
    assert writes is not None
    await writes.aclose()
    assert db.stat().st_mode & 0o077 == 0
