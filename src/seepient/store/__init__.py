"""Server state on SQLAlchemy 2 (async): tokens, sessions, turns, history, events, approvals and grants.

SQLite (WAL) by default, PostgreSQL through psycopg 3; alembic migrates the schema on open. The package
names the store and the records its callers name; every record ``Store`` returns is in ``records.py``.
``Store`` and its neighbours load SQLAlchemy on first use, so the records, ``home_db`` and ``session_writes``
load without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports
from seepient.store.records import SessionRecord, StoredEvent, TurnEnd

if TYPE_CHECKING:
    from seepient.store.repository import Store, StoreError, database_url

__getattr__ = lazy_exports(
    __name__, dict.fromkeys(("Store", "StoreError", "database_url"), "seepient.store.repository")
)

__all__ = ["SessionRecord", "Store", "StoreError", "StoredEvent", "TurnEnd", "database_url"]
