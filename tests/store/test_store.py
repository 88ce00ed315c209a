"""The store against a real SQLite database: tokens stored hashed, tenancy in every read, events in order,
crash recovery, and the migrations."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from seepient.store import Store, StoreError, TurnEnd, database_url


async def test_a_token_is_stored_only_as_its_hash(store: Store, tmp_path: Path) -> None:
    issued = await store.create_token("alice")
    assert await store.authenticate(issued.secret) == (issued.token_id, "alice")
    async with store.engine.connect() as connection:
        rows = [tuple(row) for row in await connection.execute(text("SELECT * FROM tokens"))]
    # spt_<id>_<secret>: the secret itself may hold "_" (URL-safe base64), so it is all after the id; its last
    # "_"-piece alone can be a character or two that any file holds by chance.
    secret_part = issued.secret.split("_", 2)[2]
    assert len(secret_part) >= 32
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


async def test_turns_of_several_sessions_start_and_end_with_a_batch_of_events(store: Store) -> None:
    for sid in ("ses_a", "ses_b"):
        await store.create_session(
            session_id=sid, principal="alice", workspace="/w", model="m:x", mode="auto"
        )
    await store.start_turn("ses_b", "turn_b0", "before")
    await store.finish_turn(
        "ses_b", "turn_b0", status="completed", reason="final", reply="", messages=[{"n": 0}]
    )
    await store.append_events_many(
        [("ses_a", 1, "turn_started", "{}"), ("ses_b", 1, "turn_started", "{}")],
        turns=[("ses_a", "turn_a1", "one"), ("ses_b", "turn_b1", "two")],
    )
    assert [(await store.get_session(s, "alice")).status for s in ("ses_a", "ses_b")] == ["running"] * 2  # type: ignore[union-attr]
    ends = [
        TurnEnd("ses_a", "turn_a1", "completed", "final", "done a", ({"n": 1}, {"n": 2})),
        TurnEnd("ses_b", "turn_b1", "interrupted", "interrupted", "", ({"n": 3},)),
    ]
    await store.append_events_many(
        [("ses_a", 2, "turn_completed", "{}"), ("ses_b", 2, "turn_completed", "{}")], ended=ends
    )
    a_turns, b_turns = await store.turns("ses_a"), await store.turns("ses_b")
    assert [(t.id, t.status, t.reason, t.reply) for t in a_turns] == [
        ("turn_a1", "completed", "final", "done a")
    ]
    assert [(t.number, t.status) for t in b_turns] == [(1, "completed"), (2, "interrupted")]
    # Each session's stored history is replaced by the one its turn left, and no other session's is touched.
    assert await store.messages("ses_a") == [{"n": 1}, {"n": 2}]
    assert await store.messages("ses_b") == [{"n": 3}]
    for sid in ("ses_a", "ses_b"):
        record = await store.get_session(sid, "alice")
        assert record is not None and (record.status, record.last_seq) == ("idle", 2)
    # An end alone (no events with it) is a transaction too.
    await store.start_turn("ses_a", "turn_a2", "again")
    await store.append_events_many([], ended=[TurnEnd("ses_a", "turn_a2", "error", "error", "", ())])
    assert [t.status for t in await store.turns("ses_a")] == ["completed", "error"]
    assert await store.messages("ses_a") == []


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
        assert raw.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0003"


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


async def test_an_expired_token_no_longer_authenticates_nor_counts(tmp_path: Path) -> None:
    from datetime import timedelta

    store = await Store.open(database_url(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path))
    try:
        lasting = await store.create_token("alice", expires_in=timedelta(days=1))
        assert await store.authenticate(lasting.secret) == (lasting.token_id, "alice")
        brief = await store.create_token("bob", expires_in=timedelta(milliseconds=1))
        await asyncio.sleep(0.01)
        assert await store.authenticate(brief.secret) is None
        states = {t.principal: t.state() for t in await store.list_tokens()}
        assert states == {"alice": "active", "bob": "expired"}
        await store.revoke_token(lasting.token_id)
        assert not await store.has_tokens()  # neither a revoked nor an expired token lets a server bind wide
        with pytest.raises(ValueError):
            await store.create_token("carol", expires_in=timedelta(0))
    finally:
        await store.aclose()


def test_the_newest_revision_read_from_the_file_names_is_alembics_head() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from seepient.store.repository import _MIGRATIONS, newest_revision

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    assert newest_revision() == ScriptDirectory.from_config(config).get_current_head()


async def test_an_older_database_is_still_migrated_and_a_current_one_opens_without_alembic(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db.sqlite"
    url = f"sqlite+aiosqlite:///{db}"
    await (await Store.open(url)).aclose()
    # Back to the first schema's revision mark and without the later column: the next open must migrate.
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '0002'")
        raw.execute("ALTER TABLE tokens DROP COLUMN expires_at")
    store = await Store.open(url)
    try:
        issued = await store.create_token("alice")
        assert await store.authenticate(issued.secret) == (issued.token_id, "alice")
    finally:
        await store.aclose()
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0003"
        assert "expires_at" in {row[1] for row in raw.execute("PRAGMA table_info(tokens)")}
    code = (
        "import asyncio, sys\n"
        "from seepient.store import Store\n"
        f"asyncio.run(Store.open({url!r}))\n"
        "print('alembic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", "a database at the newest schema is opened without loading alembic"
