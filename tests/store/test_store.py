"""The store against a real SQLite database: tokens stored hashed, tenancy in every read, events in order,
crash recovery, and the migrations."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from seepient.store import Store, StoreError, database_url


async def test_a_token_is_stored_only_as_its_hash(store: Store, tmp_path: Path) -> None:
    issued = await store.create_token("alice")
    assert await store.authenticate(issued.secret) == (issued.token_id, "alice")
    async with store.engine.connect() as connection:
        rows = [tuple(row) for row in await connection.execute(text("SELECT * FROM tokens"))]
    secret_part = issued.secret.rsplit("_", 1)[-1]
    assert rows and not any(secret_part in str(value) for row in rows for value in row)
    assert hashlib.sha256(issued.secret.encode()).hexdigest() in rows[0]
    database = tmp_path / "seepient.db"
    if database.exists():  # SQLite: not in the file or its WAL either
        raw = database.read_bytes() + (tmp_path / "seepient.db-wal").read_bytes()
        assert secret_part.encode() not in raw


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"),  # last character changed
        lambda s: s + "x",  # extended
        lambda s: s[:20],  # truncated
        lambda s: "spt_0000000000000000_" + s.split("_", 2)[2],  # right secret, wrong id
        lambda s: s.replace("spt_", "xyz_", 1),
        lambda s: "",
        lambda s: "spt__",
    ],
)
async def test_a_forged_token_is_refused(store: Store, mangle) -> None:  # type: ignore[no-untyped-def]
    issued = await store.create_token("alice")
    assert await store.authenticate(mangle(issued.secret)) is None


async def test_a_revoked_token_is_refused(store: Store) -> None:
    issued = await store.create_token("alice")
    assert await store.revoke_token(issued.token_id)
    assert await store.authenticate(issued.secret) is None
    assert not await store.has_tokens()


async def test_principal_names_are_checked(store: Store) -> None:
    for bad in ("", "x" * 201, "line\nbreak"):
        with pytest.raises(ValueError, match="principal"):
            await store.create_token(bad)


async def test_every_session_read_is_scoped_to_its_principal(store: Store) -> None:
    await store.create_session(
        session_id="ses_a", principal="alice", workspace="/w", model="m:x", mode="auto"
    )
    assert (await store.get_session("ses_a", "alice")) is not None
    assert await store.get_session("ses_a", "bob") is None
    assert await store.list_sessions("bob") == []
    assert not await store.delete_session("ses_a", "bob")
    assert (await store.get_session("ses_a", "alice")) is not None
    assert await store.delete_session("ses_a", "alice")
    assert await store.get_session("ses_a", "alice") is None


async def test_events_come_back_in_order_after_any_seq(store: Store) -> None:
    await store.create_session(
        session_id="ses_e", principal="alice", workspace="/w", model="m:x", mode="auto"
    )
    await store.append_events("ses_e", [(i, "text_delta", f'{{"seq": {i}}}') for i in range(1, 6)])
    await store.append_events("ses_e", [(6, "turn_completed", '{"seq": 6}')])
    assert [e.seq for e in await store.events_after("ses_e", 0)] == [1, 2, 3, 4, 5, 6]
    assert [(e.seq, e.data) for e in await store.events_after("ses_e", 4)] == [
        (5, '{"seq": 5}'),
        (6, '{"seq": 6}'),
    ]
    assert (await store.get_session("ses_e", "alice")).last_seq == 6  # type: ignore[union-attr]


async def test_a_turn_keeps_its_history_and_a_crash_marks_it_interrupted(store: Store) -> None:
    await store.create_session(
        session_id="ses_t", principal="alice", workspace="/w", model="m:x", mode="auto"
    )
    await store.start_turn("ses_t", "turn_1", "hello")
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    await store.finish_turn(
        "ses_t", "turn_1", status="completed", reason="final", reply="hi", messages=history
    )
    await store.start_turn("ses_t", "turn_2", "again")
    await store.add_pending("ses_t", "apr_1", {"x": 1}, timeout_s=60)
    await store.append_events("ses_t", [(1, "turn_started", "{}")])
    assert await store.recover_after_crash() == [("ses_t", "turn_2", 1)]
    turns = await store.turns("ses_t")
    assert [(t.number, t.status) for t in turns] == [(1, "completed"), (2, "interrupted")]
    assert await store.messages("ses_t") == history
    assert await store.pending("ses_t") == []
    assert (await store.get_session("ses_t", "alice")).status == "idle"  # type: ignore[union-attr]


async def test_a_pending_approval_is_answered_once(store: Store) -> None:
    await store.create_session(
        session_id="ses_p", principal="alice", workspace="/w", model="m:x", mode="auto"
    )
    await store.add_pending("ses_p", "apr_1", {"x": 1}, timeout_s=60)
    assert [p.request_id for p in await store.pending("ses_p")] == ["apr_1"]
    assert await store.resolve_pending("apr_1", "answered", {"decision": "reject"})
    assert not await store.resolve_pending("apr_1", "answered", {"decision": "approve_once"})
    assert await store.pending("ses_p") == []


async def test_sqlite_runs_in_wal_mode_and_reopens_migrated(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"
    first = await Store.open(url)
    issued = await first.create_token("alice")
    await first.aclose()
    second = await Store.open(url)
    try:
        assert await second.authenticate(issued.secret) == (issued.token_id, "alice")
    finally:
        await second.aclose()
    with sqlite3.connect(tmp_path / "db.sqlite") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0002"


def test_database_urls(tmp_path: Path) -> None:
    assert database_url(None, tmp_path) == f"sqlite+aiosqlite:///{tmp_path / 'seepient.db'}"
    assert database_url("sqlite:////x/y.db", tmp_path) == "sqlite+aiosqlite:////x/y.db"
    assert database_url("postgresql://u@h/db", tmp_path) == "postgresql+psycopg://u@h/db"
    with pytest.raises(StoreError, match="unsupported database 'mysql'"):
        database_url("mysql://u@h/db", tmp_path)


async def test_an_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(StoreError, match="cannot open the database"):
        await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'a-file' / 'db.sqlite'}")
