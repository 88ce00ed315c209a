"""The store's async API over SQLAlchemy: open (and migrate) a database, then read and write server state.

SQLite runs in WAL mode with ``synchronous=NORMAL``: every commit survives a crash or ``kill -9`` of the
server (an OS crash may drop the last few, never corrupt); PostgreSQL is reached with psycopg 3. Every
query that reads a session takes the principal, so a caller cannot forget the tenancy check.

``Store`` is one class over one pair of engines and one transaction discipline (every write through
``_write``), which is why this module stays near 700 lines; the records it returns are ``records.py`` and the
SQLite file handling ``sqlite_files.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import operator
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, bindparam, delete, event, func, insert, inspect, or_, select, text, update
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.sql.expression import ClauseElement

from seepient.protocol.errors import StorageError
from seepient.store.home_db import MIGRATIONS as _MIGRATIONS
from seepient.store.home_db import home_database, newest_revision
from seepient.store.records import (
    IssuedToken,
    PendingApproval,
    SessionRecord,
    StoredEvent,
    TokenInfo,
    TurnClaim,
    TurnEnd,
    TurnRecord,
    aware,
    session_record,
    turn_record,
)
from seepient.store.sqlite_files import private_sqlite_file, sqlite_pragmas
from seepient.store.tables import (
    EventRow,
    GrantRow,
    MessageRow,
    PendingApprovalRow,
    ReplicaRow,
    SessionRow,
    TokenRow,
    TurnRow,
)

_TOKEN_PREFIX = "spt"
#: The PostgreSQL channel on which replicas announce committed changes (see ``seepient.store.notify``).
CHANGES_CHANNEL = "seepient_changes"
#: A replica whose heartbeat is older than this is taken for dead and its running turns for cut.
REPLICA_STALE_S = 15.0

#: ``(session_id, turn_id, seq) -> (type, json)``: the event that closes a turn a dead server cut.
CloseCutTurn = Callable[[str, str, int], tuple[str, str]]


class StoreError(StorageError):
    """The database could not be opened or migrated; the message says which and what to do."""


def database_url(raw: str | None, home: Path) -> str:
    """The SQLAlchemy async URL for ``--database`` (``sqlite:///…``, ``postgresql://…``), default the home DB."""
    if not raw:
        return f"sqlite+aiosqlite:///{home_database(home)}"
    url = make_url(raw)
    driver = url.drivername
    if driver in ("sqlite", "sqlite+aiosqlite"):
        return url.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if driver in ("postgresql", "postgres", "postgresql+psycopg"):
        return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    raise StoreError(f"unsupported database {driver!r}: use sqlite:///PATH or postgresql://USER@HOST/DB")


def _now() -> datetime:
    return datetime.now(UTC)


def _hash_secret(secret: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _migrate(connection: Connection) -> None:
    # A database already at the newest schema (every open but the first) needs no migration, and loading
    # alembic and its script folder to learn that costs a short command a noticeable share of its time.
    if _current_revision(connection) == newest_revision():
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def _current_revision(connection: Connection) -> str | None:
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


class Store:
    """One database. Create with ``await Store.open(url)``; close with ``await store.aclose()``."""

    def __init__(self, engine: AsyncEngine, write_engine: AsyncEngine | None = None) -> None:
        self.engine = engine
        self._write_engine = write_engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        # Writes on their own connection: a burst of reads (hundreds of clients authenticating at once) then
        # cannot hold up the commit every streamed event waits for.
        self._writers = (
            async_sessionmaker(write_engine, expire_on_commit=False)
            if write_engine is not None
            else self._sessions
        )
        # SQLite takes one writer at a time; queueing writers here, rather than letting pooled connections
        # race for the file lock, keeps a busy server from failing with "database is locked".
        self._one_writer = asyncio.Lock() if engine.dialect.name == "sqlite" else None
        self.shared = engine.dialect.name == "postgresql"
        self._insert_events = _DriverStatement(_INSERT_EVENT, engine.dialect)
        self._raise_last_seqs = _DriverStatement(_RAISE_LAST_SEQ, engine.dialect)
        """Whether several replicas may share this database (PostgreSQL); SQLite belongs to one process."""
        self.replica_id: str | None = None
        """Set by the server: names this replica in the notifications it sends."""

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncSession]:
        async with self._one_writer or contextlib.nullcontext():
            async with self._writers.begin() as db:
                yield db

    @asynccontextmanager
    async def _write_core(self) -> AsyncIterator[AsyncConnection]:
        """``_write`` without the ORM session, for the event stream's batches: a session's own begin, commit
        and close cost about a third of a small batch's time in the event loop, and the batches use none of it."""
        async with self._one_writer or contextlib.nullcontext():
            async with (self._write_engine or self.engine).begin() as connection:
                yield connection

    @classmethod
    async def open(cls, url: str) -> Store:
        """Connect to ``url`` (an async SQLAlchemy URL, see ``database_url``) and migrate it to the latest schema."""
        parsed = make_url(url)
        shown = parsed.render_as_string(hide_password=True)
        if parsed.drivername.startswith("sqlite"):
            if parsed.database and parsed.database != ":memory:":
                try:
                    Path(parsed.database).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                    private_sqlite_file(Path(parsed.database))
                except OSError as exc:
                    raise StoreError(f"cannot open the database {shown}: {exc.strerror or exc}") from None
            engine = create_async_engine(url)
            event.listen(engine.sync_engine, "connect", sqlite_pragmas)
            write_engine: AsyncEngine | None = None
            if parsed.database and parsed.database != ":memory:":
                # One connection is all the writes need: SQLite takes one writer at a time anyway.
                write_engine = create_async_engine(url, pool_size=1, max_overflow=0)
                event.listen(write_engine.sync_engine, "connect", sqlite_pragmas)
        else:
            engine = create_async_engine(url, pool_pre_ping=True)
            write_engine = None
        try:
            async with engine.begin() as connection:
                await connection.run_sync(_migrate)
        except Exception as exc:
            await engine.dispose()
            if write_engine is not None:
                await write_engine.dispose()
            raise StoreError(f"cannot open the database {shown}: {exc}") from exc
        return cls(engine, write_engine)

    async def aclose(self) -> None:
        await self.engine.dispose()
        if self._write_engine is not None:
            await self._write_engine.dispose()

    def libpq_url(self) -> str:
        """The database as a libpq connection URI, for a dedicated ``LISTEN`` connection."""
        return self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)

    async def _notify(self, db: AsyncSession | AsyncConnection, payloads: Sequence[str]) -> None:
        # Sent inside the writing transaction: PostgreSQL delivers notifications on commit, never before.
        if self.shared and payloads:
            await db.execute(
                text(f"SELECT pg_notify('{CHANGES_CHANNEL}', p) FROM unnest(CAST(:ps AS text[])) AS p"),
                {"ps": list(payloads)},
            )

    def _tag(self, kind: str, *parts: object) -> str:
        return " ".join([kind, self.replica_id or "-", *(str(p) for p in parts)])

    # -- tokens ---------------------------------------------------------------------------------------

    async def _add(self, row: object) -> None:
        """Insert one row in a transaction of its own."""
        async with self._write() as db:
            db.add(row)

    async def create_token(self, principal: str, *, expires_in: timedelta | None = None) -> IssuedToken:
        """A new token for ``principal``; with ``expires_in`` it stops authenticating after that long."""
        if not principal or len(principal) > 200 or not principal.isprintable():
            raise ValueError("a principal is a printable name of 1 to 200 characters")
        if expires_in is not None and expires_in <= timedelta(0):
            raise ValueError("a token's lifetime must be positive")
        token_id = secrets.token_hex(8)
        secret = f"{_TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
        now = _now()
        await self._add(
            TokenRow(
                id=token_id,
                principal=principal,
                secret_sha256=_hash_secret(secret),
                created_at=now,
                expires_at=now + expires_in if expires_in is not None else None,
            )
        )
        return IssuedToken(token_id=token_id, principal=principal, secret=secret)

    async def list_tokens(self) -> list[TokenInfo]:
        """Every token, oldest first, with its state; secrets are not kept, so none can be shown."""
        async with self._sessions() as db:
            rows = await db.scalars(select(TokenRow).order_by(TokenRow.created_at))
            return [
                TokenInfo(
                    token_id=r.id,
                    principal=r.principal,
                    created_at=aware(r.created_at),
                    expires_at=aware(r.expires_at) if r.expires_at is not None else None,
                    revoked_at=aware(r.revoked_at) if r.revoked_at is not None else None,
                )
                for r in rows
            ]

    async def authenticate(self, secret: str) -> tuple[str, str] | None:
        """``(token_id, principal)`` for a valid, unrevoked token, else ``None``."""
        # The random part is URL-safe base64 and may itself hold underscores.
        parts = secret.split("_", 2)
        if len(parts) < 3 or parts[0] != _TOKEN_PREFIX:
            return None
        token_id = parts[1]
        async with self._sessions() as db:
            row = await db.get(TokenRow, token_id)
        # Hash and compare even when the id is unknown, so timing does not tell which ids exist.
        stored = row.secret_sha256 if row is not None else "0" * 64
        matches = hmac.compare_digest(_hash_secret(secret), stored)
        if row is None or not matches or row.revoked_at is not None:
            return None
        if row.expires_at is not None and aware(row.expires_at) <= _now():
            return None
        return row.id, row.principal

    async def has_tokens(self) -> bool:
        async with self._sessions() as db:
            count = await db.scalar(
                select(func.count())
                .select_from(TokenRow)
                .where(
                    TokenRow.revoked_at.is_(None),
                    or_(TokenRow.expires_at.is_(None), TokenRow.expires_at > _now()),
                )
            )
        return bool(count)

    async def revoke_token(self, token_id: str) -> bool:
        async with self._write() as db:
            result = await db.execute(
                update(TokenRow)
                .where(TokenRow.id == token_id, TokenRow.revoked_at.is_(None))
                .values(revoked_at=_now())
            )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    # -- sessions -------------------------------------------------------------------------------------

    async def create_session(
        self, *, session_id: str, principal: str, workspace: str, model: str, mode: str
    ) -> SessionRecord:
        now = _now()
        row = SessionRow(
            id=session_id,
            principal=principal,
            workspace=workspace,
            model=model,
            mode=mode,
            status="idle",
            last_seq=0,
            created_at=now,
            updated_at=now,
        )
        await self._add(row)
        return session_record(row)

    async def get_session(self, session_id: str, principal: str) -> SessionRecord | None:
        """The session when it exists *and* belongs to ``principal``; anything else reads as absent."""
        async with self._sessions() as db:
            row = await db.scalar(
                select(SessionRow).where(SessionRow.id == session_id, SessionRow.principal == principal)
            )
        return session_record(row) if row is not None else None

    async def list_sessions(self, principal: str) -> list[SessionRecord]:
        async with self._sessions() as db:
            rows = await db.scalars(
                select(SessionRow).where(SessionRow.principal == principal).order_by(SessionRow.created_at)
            )
            return [session_record(r) for r in rows]

    async def delete_session(self, session_id: str, principal: str) -> bool:
        async with self._write() as db:
            owned = await db.scalar(
                select(SessionRow.id).where(SessionRow.id == session_id, SessionRow.principal == principal)
            )
            if owned is None:
                return False
            # Children first: SQLite enforces ON DELETE CASCADE only with foreign_keys=ON, which is set,
            # but PostgreSQL and SQLite agree on explicit deletes regardless.
            for table in (EventRow, MessageRow, TurnRow, PendingApprovalRow, GrantRow):
                await db.execute(delete(table).where(table.session_id == session_id))
            await db.execute(delete(SessionRow).where(SessionRow.id == session_id))
        return True

    async def set_status(self, session_id: str, status: str) -> None:
        async with self._write() as db:
            await db.execute(
                update(SessionRow).where(SessionRow.id == session_id).values(status=status, updated_at=_now())
            )

    # -- turns ----------------------------------------------------------------------------------------

    async def start_turn(self, session_id: str, turn_id: str, prompt: str) -> TurnRecord:
        async with self._write() as db:
            number = (
                await db.scalar(
                    select(func.count()).select_from(TurnRow).where(TurnRow.session_id == session_id)
                )
                or 0
            ) + 1
            row = TurnRow(
                id=turn_id,
                session_id=session_id,
                number=number,
                prompt=prompt,
                status="running",
                reply="",
                created_at=_now(),
            )
            db.add(row)
            await db.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id)
                .values(status="running", updated_at=_now())
            )
        return turn_record(row)

    async def finish_turn(
        self,
        session_id: str,
        turn_id: str,
        *,
        status: str,
        reason: str,
        reply: str,
        messages: Sequence[dict[str, Any]],
    ) -> None:
        """Close a turn and replace the session's stored history with ``messages``, in one transaction."""
        end = TurnEnd(session_id, turn_id, status, reason, reply, tuple(messages))
        async with self._write_core() as db:
            await self._finish_turns(db, [end])

    async def turns(self, session_id: str) -> list[TurnRecord]:
        async with self._sessions() as db:
            rows = await db.scalars(
                select(TurnRow).where(TurnRow.session_id == session_id).order_by(TurnRow.number)
            )
            return [turn_record(r) for r in rows]

    async def messages(self, session_id: str) -> list[dict[str, Any]]:
        async with self._sessions() as db:
            rows = await db.scalars(
                select(MessageRow.body)
                .where(MessageRow.session_id == session_id)
                .order_by(MessageRow.position)
            )
            return list(rows)

    async def recover_after_crash(self, close: CloseCutTurn | None = None) -> list[tuple[str, str, int]]:
        """Mark turns a dead server left running as interrupted; returns ``(session_id, turn_id, last_seq)``
        for each. With ``close``, the event it makes is stored as the turn's last (seq ``last_seq + 1``) in
        the same transaction, so a client replaying the turn sees it end rather than hang.

        On SQLite the server is the only process, so every running turn was cut. On a shared database only
        the turns of sessions owned by no live replica are (a replica is live while its heartbeat is under
        ``REPLICA_STALE_S`` old); each is closed by exactly one replica even when several recover at once.
        Their stored history is that of the last completed turn, so the session can simply be continued.
        """
        cut: list[tuple[str, str, int]] = []
        async with self._write() as db:
            query = (
                select(TurnRow.session_id, TurnRow.id, SessionRow.last_seq)
                .join(SessionRow, SessionRow.id == TurnRow.session_id)
                .where(TurnRow.status == "running")
                .order_by(TurnRow.session_id)
            )
            alive = select(ReplicaRow.id).where(
                ReplicaRow.heartbeat_at >= _now() - timedelta(seconds=REPLICA_STALE_S)
            )
            if self.shared:
                query = query.where(or_(SessionRow.owner.is_(None), SessionRow.owner.not_in(alive)))
                # Two replicas recovering at once: the row lock makes the second wait and then skip.
                query = query.with_for_update(of=TurnRow, skip_locked=True)
            candidates = list(await db.execute(query))
            notices = []
            for session_id, turn_id, last_seq in candidates:
                done = await db.execute(
                    update(TurnRow)
                    .where(TurnRow.id == turn_id, TurnRow.status == "running")
                    .values(status="interrupted", reason="interrupted", finished_at=_now())
                )
                if not done.rowcount:  # type: ignore[attr-defined]
                    continue
                cut.append((session_id, turn_id, last_seq))
                await db.execute(
                    update(SessionRow)
                    .where(SessionRow.id == session_id)
                    .values(status="idle", interrupt_requested=False, updated_at=_now())
                )
                await db.execute(
                    update(PendingApprovalRow)
                    .where(
                        PendingApprovalRow.session_id == session_id, PendingApprovalRow.status == "pending"
                    )
                    .values(status="expired")
                )
                if close is not None:
                    kind, data = close(session_id, turn_id, last_seq + 1)
                    await db.execute(
                        insert(EventRow.__table__),
                        [{"session_id": session_id, "seq": last_seq + 1, "type": kind, "data": data}],
                    )
                    await db.execute(
                        update(SessionRow).where(SessionRow.id == session_id).values(last_seq=last_seq + 1)
                    )
                    notices.append(self._tag("e", session_id, last_seq + 1))
            # A session claimed for a turn that never started is left running too, and its questions open.
            orphaned = select(SessionRow.id).where(SessionRow.status == "running")
            if self.shared:
                orphaned = orphaned.where(or_(SessionRow.owner.is_(None), SessionRow.owner.not_in(alive)))
            orphans = list(await db.scalars(orphaned))
            if orphans:
                await db.execute(update(SessionRow).where(SessionRow.id.in_(orphans)).values(status="idle"))
                await db.execute(
                    update(PendingApprovalRow)
                    .where(PendingApprovalRow.session_id.in_(orphans), PendingApprovalRow.status == "pending")
                    .values(status="expired")
                )
            await self._notify(db, notices)
        return cut

    # -- replicas -------------------------------------------------------------------------------------

    async def heartbeat(self, replica_id: str) -> None:
        """Record that ``replica_id`` is alive (creates its row on the first beat)."""
        now = _now()
        async with self._write() as db:
            done = await db.execute(
                update(ReplicaRow).where(ReplicaRow.id == replica_id).values(heartbeat_at=now)
            )
            if not done.rowcount:  # type: ignore[attr-defined]
                db.add(ReplicaRow(id=replica_id, started_at=now, heartbeat_at=now))

    async def remove_replica(self, replica_id: str) -> None:
        """A replica shutting down cleanly: its sessions are free at once, not after its heartbeat goes stale."""
        async with self._write() as db:
            await db.execute(delete(ReplicaRow).where(ReplicaRow.id == replica_id))

    async def claim_turn(self, session_id: str, replica_id: str) -> TurnClaim:
        """Make ``replica_id`` the one replica running a turn of the session, unless a turn runs already."""
        async with self._write() as db:
            done = await db.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id, SessionRow.status != "running")
                .values(owner=replica_id, status="running", interrupt_requested=False, updated_at=_now())
            )
            row = (
                await db.execute(
                    select(SessionRow.owner, SessionRow.last_seq).where(SessionRow.id == session_id)
                )
            ).first()
        owner, last_seq = row if row is not None else (None, 0)
        return TurnClaim(claimed=bool(done.rowcount), owner=owner, last_seq=last_seq)  # type: ignore[attr-defined]

    async def release_turn(self, session_id: str, replica_id: str) -> None:
        """Give back a claim whose turn never started."""
        async with self._write() as db:
            await db.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id, SessionRow.owner == replica_id)
                .values(status="idle", updated_at=_now())
            )

    async def request_interrupt(self, session_id: str) -> str | None:
        """Ask the replica running the session's turn to interrupt it; returns that replica, or ``None`` when
        no turn is running."""
        async with self._write() as db:
            done = await db.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id, SessionRow.status == "running")
                .values(interrupt_requested=True)
            )
            if not done.rowcount:  # type: ignore[attr-defined]
                return None
            owner = await db.scalar(select(SessionRow.owner).where(SessionRow.id == session_id))
            await self._notify(db, [self._tag("i", session_id)])
        return owner

    async def interrupts_requested(self, session_ids: Iterable[str]) -> list[str]:
        ids = list(session_ids)
        if not ids:
            return []
        async with self._sessions() as db:
            rows = await db.scalars(
                select(SessionRow.id).where(SessionRow.id.in_(ids), SessionRow.interrupt_requested.is_(True))
            )
            return list(rows)

    async def last_seqs(self, session_ids: Iterable[str]) -> dict[str, int]:
        ids = list(session_ids)
        if not ids:
            return {}
        async with self._sessions() as db:
            rows = await db.execute(select(SessionRow.id, SessionRow.last_seq).where(SessionRow.id.in_(ids)))
            return {session_id: last_seq for session_id, last_seq in rows}

    # -- events ---------------------------------------------------------------------------------------

    async def append_events(self, session_id: str, events: Iterable[tuple[int, str, str]]) -> None:
        """Store events ``(seq, type, json)`` of one session in order."""
        await self.append_events_many((session_id, seq, kind, data) for seq, kind, data in events)

    async def append_events_many(
        self,
        events: Iterable[tuple[str, int, str, str]],
        turns: Iterable[tuple[str, str, str]] = (),
        ended: Iterable[TurnEnd] = (),
    ) -> None:
        """Store events ``(session_id, seq, type, json)`` of several sessions, start turns ``(session_id,
        turn_id, prompt)`` as ``start_turn`` does and close turns as ``finish_turn`` does, in one transaction:
        when hundreds of turns start or end at once, they share a commit instead of queueing for one each."""
        batch = list(events)
        starting = list(turns)
        ending = list(ended)
        if not batch and not starting and not ending:
            return
        last: dict[str, int] = {}
        for session_id, seq, _, _ in batch:
            last[session_id] = max(seq, last.get(session_id, 0))
        async with self._write_core() as db:
            if batch:
                await self._insert_events.execute_many(
                    db,
                    (
                        {"session_id": sid, "seq": seq, "type": kind, "data": data}
                        for sid, seq, kind, data in batch
                    ),
                )
                await self._raise_last_seqs.execute_many(
                    db, ({"b_id": sid, "b_seq": seq} for sid, seq in last.items())
                )
            if starting:
                await self._start_turns(db, starting)
            if ending:
                await self._finish_turns(db, ending)
            if self.shared:
                await self._notify(db, [self._tag("e", sid, seq) for sid, seq in last.items()])

    async def _start_turns(self, db: AsyncConnection, starting: list[tuple[str, str, str]]) -> None:
        counts = dict(
            (
                await db.execute(
                    select(TurnRow.session_id, func.count())
                    .where(TurnRow.session_id.in_({sid for sid, _, _ in starting}))
                    .group_by(TurnRow.session_id)
                )
            ).all()
        )
        now = _now()
        rows = []
        for session_id, turn_id, prompt in starting:
            counts[session_id] = counts.get(session_id, 0) + 1
            rows.append(
                {
                    "id": turn_id,
                    "session_id": session_id,
                    "number": counts[session_id],
                    "prompt": prompt,
                    "status": "running",
                    "reply": "",
                    "created_at": now,
                }
            )
        await db.execute(insert(TurnRow.__table__), rows)
        await db.execute(
            update(SessionRow.__table__)
            .where(SessionRow.__table__.c.id == bindparam("b_id"))
            .values(status="running", updated_at=now),
            [{"b_id": sid} for sid in {sid for sid, _, _ in starting}],
        )

    async def _finish_turns(self, db: AsyncConnection, ending: list[TurnEnd]) -> None:
        now = _now()
        turns, messages, sessions = TurnRow.__table__, MessageRow.__table__, SessionRow.__table__
        await db.execute(
            update(turns)
            .where(turns.c.id == bindparam("b_id"))
            .values(status=bindparam("b_status"), reason=bindparam("b_reason"), reply=bindparam("b_reply"))
            .values(finished_at=now),
            [
                {"b_id": e.turn_id, "b_status": e.status, "b_reason": e.reason, "b_reply": e.reply}
                for e in ending
            ],
        )
        # Each session's history is the one its last ending turn left (a batch holds one per session anyway).
        histories = {e.session_id: e.messages for e in ending}
        await db.execute(delete(messages).where(messages.c.session_id.in_(histories)))
        rows = [
            {"session_id": session_id, "position": i, "body": body}
            for session_id, history in histories.items()
            for i, body in enumerate(history)
        ]
        if rows:
            await db.execute(insert(messages), rows)
        await db.execute(
            update(sessions).where(sessions.c.id == bindparam("b_id")).values(status="idle", updated_at=now),
            [{"b_id": session_id} for session_id in histories],
        )

    async def events_after(self, session_id: str, after: int, limit: int = 10_000) -> list[StoredEvent]:
        async with self._sessions() as db:
            rows = await db.execute(
                select(EventRow.seq, EventRow.type, EventRow.data)
                .where(EventRow.session_id == session_id, EventRow.seq > after)
                .order_by(EventRow.seq)
                .limit(limit)
            )
            return [StoredEvent(seq=seq, type=kind, data=data) for seq, kind, data in rows]

    # -- approvals and grants -------------------------------------------------------------------------

    async def add_pending(
        self, session_id: str, request_id: str, body: dict[str, Any], *, timeout_s: float
    ) -> None:
        now = _now()
        await self._add(
            PendingApprovalRow(
                request_id=request_id,
                session_id=session_id,
                body=body,
                status="pending",
                created_at=now,
                expires_at=now + timedelta(seconds=timeout_s),
            )
        )

    async def answer_pending(self, session_id: str, request_id: str, answer: dict[str, Any]) -> bool:
        """Answer a pending request of the session from any replica (the one running the turn is told);
        ``False`` when it is not pending (answered, expired, or not the session's)."""
        async with self._write() as db:
            done = await db.execute(
                update(PendingApprovalRow)
                .where(
                    PendingApprovalRow.request_id == request_id,
                    PendingApprovalRow.session_id == session_id,
                    PendingApprovalRow.status == "pending",
                )
                .values(status="answered", answer=answer)
            )
            if not done.rowcount:  # type: ignore[attr-defined]
                return False
            await self._notify(db, [self._tag("a", session_id, request_id)])
        return True

    async def pending_request(self, session_id: str, request_id: str) -> PendingApproval | None:
        """One request of the session, whatever its status (``None`` when the session has no such request)."""
        async with self._sessions() as db:
            row = await db.scalar(
                select(PendingApprovalRow).where(
                    PendingApprovalRow.request_id == request_id, PendingApprovalRow.session_id == session_id
                )
            )
        if row is None:
            return None
        return PendingApproval(
            request_id=row.request_id,
            session_id=row.session_id,
            body=row.body,
            status=row.status,
            expires_at=aware(row.expires_at),
            answer=row.answer,
        )

    async def resolve_pending(self, request_id: str, status: str, answer: dict[str, Any] | None) -> bool:
        """Close a pending request once; ``False`` when it was already answered or expired."""
        async with self._write() as db:
            result = await db.execute(
                update(PendingApprovalRow)
                .where(PendingApprovalRow.request_id == request_id, PendingApprovalRow.status == "pending")
                .values(status=status, answer=answer)
            )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def pending(self, session_id: str) -> list[PendingApproval]:
        async with self._sessions() as db:
            rows = await db.scalars(
                select(PendingApprovalRow)
                .where(PendingApprovalRow.session_id == session_id, PendingApprovalRow.status == "pending")
                .order_by(PendingApprovalRow.created_at)
            )
            return [
                PendingApproval(
                    request_id=r.request_id,
                    session_id=r.session_id,
                    body=r.body,
                    status=r.status,
                    expires_at=aware(r.expires_at),
                )
                for r in rows
            ]

    async def add_grant(self, session_id: str, kind: str, value: str) -> None:
        await self._add(GrantRow(session_id=session_id, kind=kind, value=value, created_at=_now()))

    async def grants(self, session_id: str) -> list[tuple[str, str]]:
        async with self._sessions() as db:
            rows = await db.execute(
                select(GrantRow.kind, GrantRow.value)
                .where(GrantRow.session_id == session_id)
                .order_by(GrantRow.id)
            )
            return [(kind, value) for kind, value in rows]


class _DriverStatement:
    """A Core statement compiled once for the database's driver, executed with many rows at a time.

    A streamed burst is thousands of rows per transaction: handed to the driver as they are, they skip
    SQLAlchemy's processing of every row's parameters, which cost about as much as the database's own work.
    Only for statements whose columns need no conversion on the way in (text and integers).
    """

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql = str(compiled)
        # Positional drivers (SQLite's ``?``) take tuples in this order; named ones (psycopg) take the mappings.
        order = compiled.positiontup
        self._order = operator.itemgetter(*order) if order else None
        self._aiosqlite = dialect.driver == "aiosqlite"

    async def execute_many(self, connection: AsyncConnection, rows: Iterable[dict[str, Any]]) -> None:
        """Run the statement once per row, in ``connection``'s transaction."""
        ordered = list(rows) if self._order is None else [self._order(row) for row in rows]
        if self._aiosqlite:
            # aiosqlite's own executemany is one trip to its thread and back; through SQLAlchemy's cursor it is
            # three (open, execute, close), and every event waits for the trips of the commit it is in, each
            # of which waits its turn in a busy event loop.
            driver = (await connection.get_raw_connection()).driver_connection
            await driver.executemany(self.sql, ordered)
        else:
            await connection.exec_driver_sql(self.sql, ordered)


_INSERT_EVENT = insert(EventRow.__table__)
_RAISE_LAST_SEQ = (
    update(SessionRow.__table__)
    .where(
        SessionRow.__table__.c.id == bindparam("b_id"), SessionRow.__table__.c.last_seq < bindparam("b_seq")
    )
    .values(last_seq=bindparam("b_seq"))
)
