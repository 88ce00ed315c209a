"""Changes other replicas committed to a shared PostgreSQL store, heard through ``LISTEN``.

A notification only says *that* something changed (a session's new last seq, an approval answered, an
interrupt asked for); readers fetch the change itself from the tables, so a payload is never trusted for
content, and a lost notification only delays a reader until its next poll.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import psycopg

from seepient.store.repository import CHANGES_CHANNEL, Store


@dataclass(frozen=True)
class Change:
    """``kind`` is ``events`` (``value`` the last stored seq), ``answer`` (``value`` the request id) or
    ``interrupt``; ``replica`` is the replica that made the change."""

    kind: str
    replica: str
    session_id: str
    value: str


_KINDS = {"e": "events", "a": "answer", "i": "interrupt"}


def parse_change(payload: str) -> Change | None:
    """The change a notification announces, or ``None`` for a payload this version does not know."""
    parts = payload.split(" ")
    if len(parts) < 3 or parts[0] not in _KINDS:
        return None
    kind, replica, session_id, *rest = parts
    return Change(_KINDS[kind], replica, session_id, rest[0] if rest else "")


async def listen(store: Store) -> AsyncIterator[Change]:
    """Every change announced on the store's channel from now on, until the connection drops (then the
    iterator raises ``psycopg.OperationalError``; the caller reconnects and catches up by polling)."""
    async with await psycopg.AsyncConnection.connect(store.libpq_url(), autocommit=True) as connection:
        await connection.execute(f"LISTEN {CHANGES_CHANNEL}")
        async for notice in connection.notifies():
            change = parse_change(notice.payload)
            if change is not None:
                yield change
