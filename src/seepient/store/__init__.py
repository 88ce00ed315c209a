"""Server state on SQLAlchemy 2 (async): tokens, sessions, turns, history, events, approvals and grants.

SQLite (WAL) by default, PostgreSQL through psycopg 3; alembic migrates the schema on open.
"""

from seepient.store.repository import (
    IssuedToken,
    PendingApproval,
    SessionRecord,
    Store,
    StoredEvent,
    StoreError,
    TurnClaim,
    TurnRecord,
    database_url,
)

__all__ = [
    "IssuedToken",
    "PendingApproval",
    "SessionRecord",
    "Store",
    "StoreError",
    "StoredEvent",
    "TurnClaim",
    "TurnRecord",
    "database_url",
]
