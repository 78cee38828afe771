"""Console lines of a run, read back in the order they were ingested."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = ["ConsoleStore"]


class ConsoleStore:
    def __init__(self, db: Db) -> None:
        self.db = db

    def lines(self, run_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` lines with id greater than ``after``."""
        c = S.console.c
        q = (
            select(c.id, c.ts, c.stream, c.text)
            .where(c.run_id == run_id, c.id > after)
            .order_by(c.id)
            .limit(limit)
        )
        with self.db.read() as conn:
            return [{"id": i, "ts": ts, "stream": s, "text": t} for i, ts, s, t in conn.execute(q)]
