"""Requests to stop live runs (``POST /runs/{id}/stop``; the MCP tool ``stop_run``).

Table ``run_stops`` (Alembic revision ``0013_run_stops``): one row per run asked to stop,
``run_id`` (the run's key), ``requested_at`` (unix seconds) and ``user_id`` (who asked).
The run's uploader learns of it from the answers to its heartbeats and record batches
(``"stop": true``) and interrupts its process as Ctrl+C would; the row stays as the record
of who stopped the run.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, select
from sqlalchemy.exc import IntegrityError

from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = ["RunStops", "run_stops"]

run_stops = Table(
    "run_stops",
    S.metadata,
    Column("run_id", String(64), primary_key=True),
    Column("requested_at", Float, nullable=False),
    Column("user_id", Integer, nullable=True),
)


class RunStops:
    def __init__(self, db: Db) -> None:
        self.db = db

    def request(self, run_id: str, user_id: int | None) -> None:
        """Record that ``user_id`` asked run ``run_id`` to stop (again: kept as first asked)."""
        try:
            with self.db.tx() as conn:
                conn.execute(
                    run_stops.insert().values(
                        run_id=run_id, requested_at=self.db.clock(), user_id=user_id
                    )
                )
        except IntegrityError:
            pass  # asked before: the first request stands

    def requested(self, run_id: str) -> bool:
        q = select(run_stops.c.run_id).where(run_stops.c.run_id == run_id)
        with self.db.read() as conn:
            return conn.execute(q).first() is not None
