"""Rate limits in the database: token buckets every server process shares.

One row of ``rate_limits`` per bucket (``k:<api key id>`` for requests per key,
``u:<name>`` and ``a:<address>`` for failed sign-ins): its tokens and when they were
counted.  A bucket refills at ``rate`` tokens a second up to ``burst``; taking a token is
one short write transaction (the row locked on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite),
so N ``wisp server`` processes (or ``--workers N``) on one database limit as one.  Rows
idle for a day are deleted now and then.
"""

from __future__ import annotations

from sqlalchemy import delete, select, update

from wisp.server import _schema as S
from wisp.server._db import Db

__all__ = ["RateLimits"]

_IDLE = 86_400.0  # a bucket untouched this long is full again: its row can go
_SWEEP_EVERY = 10_000  # takes between deletions of idle rows (per process)


class RateLimits:
    def __init__(self, db: Db) -> None:
        self.db = db
        self._takes = 0

    def take(self, name: str, rate: float, burst: float, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens from bucket ``name``; False (nothing taken) when it lacks them."""
        now = self.db.clock()
        t = S.rate_limits.c
        with self.db.tx() as conn:
            row = {"name": name[:200], "tokens": burst, "at": now}
            self.db.dialect.insert_ignore(conn, S.rate_limits, [row], ["name"])
            q = select(t.tokens, t.at).where(t.name == row["name"])
            tokens, at = conn.execute(self.db.dialect.for_update(q)).one()
            tokens = min(burst, tokens + max(0.0, now - at) * rate)
            ok = tokens >= cost
            conn.execute(
                update(S.rate_limits)
                .where(t.name == row["name"])
                .values(tokens=tokens - cost if ok else tokens, at=max(now, at))
            )
        self._takes += 1
        if self._takes % _SWEEP_EVERY == 0:
            self.sweep(now - _IDLE)
        return bool(ok)

    def left(self, name: str, rate: float, burst: float) -> float:
        """The tokens bucket ``name`` holds now (``burst`` for a bucket never used)."""
        now = self.db.clock()
        t = S.rate_limits.c
        with self.db.read() as conn:
            got = conn.execute(select(t.tokens, t.at).where(t.name == name[:200])).first()
        if got is None:
            return burst
        return float(min(burst, got.tokens + max(0.0, now - got.at) * rate))

    def sweep(self, before: float) -> None:
        with self.db.tx() as conn:
            conn.execute(delete(S.rate_limits).where(S.rate_limits.c.at < before))
