"""Alembic environment for the store: runs migrations on the connection ``Store`` hands over."""

from __future__ import annotations

from alembic import context

from seepient.store.tables import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "the store's migrations run through seepient.store.Store.open, which passes a connection"
    )
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
