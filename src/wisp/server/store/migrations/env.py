"""Alembic environment: run with a connection handed over by ``wisp.server.store.db.migrate``."""

from __future__ import annotations

from alembic import context

from wisp.server.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
