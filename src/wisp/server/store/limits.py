"""Rate limits in the database: token buckets every server process shares.

One row of ``rate_limits`` per bucket (``k:<api key id>`` for requests per key,
``u:<name>`` and ``a:<address>`` for failed sign-ins): its tokens and when they were
counted.  A bucket refills at ``rate`` tokens a second up to ``burst``; taking a token is
one conditional ``UPDATE`` in a short write transaction (row lock on PostgreSQL, ``BEGIN
IMMEDIATE`` on SQLite),
so N ``wisp server`` processes (or ``--workers N``) on one database limit as one (API keys
take leases of a few tokens at a time: :meth:`RateLimits.take_leased`).  The transaction
does not wait for its commit to reach the disk where the backend allows (a crash may forget
a few counts, nothing else).  Rows idle for a day are deleted now and then.
"""

from __future__ import annotations

from sqlalchemy import case, delete, select, update

from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = ["RateLimits"]

_IDLE = 86_400.0  # a bucket untouched this long is full again: its row can go
_SWEEP_EVERY = 10_000  # takes between deletions of idle rows (per process)
_LEASE_PARTS = 40  # a lease is 1/40 of a bucket's burst (at least one token)
_LEASE_SECONDS = 1.0


class RateLimits:
    def __init__(self, db: Db) -> None:
        self.db = db
        self._takes = 0
        self._leases: dict[str, tuple[float, float]] = {}  # name -> (tokens, valid until)

    def take(self, name: str, rate: float, burst: float, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens from bucket ``name``; False (nothing taken) when it lacks them.

        One ``UPDATE`` that refills and takes only where enough tokens are there (a refused
        take leaves the row as it was: its refill still counts from the last take); a bucket
        seen for the first time is inserted full first."""
        now = self.db.clock()
        key = name[:200]
        t = S.rate_limits.c
        since = case((t.at < now, now - t.at), else_=0.0)
        refilled = t.tokens + since * rate
        level = case((refilled > burst, burst), else_=refilled)
        take = (
            update(S.rate_limits)
            .where(t.name == key, level >= cost)
            .values(tokens=level - cost, at=case((t.at < now, now), else_=t.at))
        )
        with self.db.tx() as conn:
            self.db.dialect.relaxed_commit(conn)
            ok = conn.execute(take).rowcount == 1
            if not ok and conn.execute(select(t.name).where(t.name == key)).first() is None:
                row = {"name": key, "tokens": float(burst), "at": now}
                self.db.dialect.insert_ignore(conn, S.rate_limits, [row], ["name"])
                ok = conn.execute(take).rowcount == 1
        self._takes += 1
        if self._takes % _SWEEP_EVERY == 0:
            self.sweep(now - _IDLE)
        return ok

    def take_leased(self, name: str, rate: float, burst: float) -> bool:
        """Take one token, from a lease this process holds when it can: at high rates a
        process takes ``burst / 40`` tokens at a time from the database and spends them
        here for up to a second, so a busy key costs one write per lease, not per request.
        Leased tokens left the shared bucket, so N processes together never admit more than
        it would; a key busy on N processes may see 429 up to N leases (5% of the burst
        each) early.  A lease not spent within its second is given up, not refunded."""
        chunk = max(1.0, float(int(burst / _LEASE_PARTS)))
        now = self.db.clock()
        have, until = self._leases.get(name, (0.0, 0.0))
        if have >= 1.0 and now < until:
            self._leases[name] = (have - 1.0, until)
            return True
        if have < 0.0 and now < until:  # refused lately: no token can have grown since
            return False
        if chunk > 1.0 and self.take(name, rate, burst, chunk):
            got = chunk
        elif self.take(name, rate, burst):
            got = 1.0
        else:
            self._leases[name] = (-1.0, now + 1.0 / rate)
            return False
        if len(self._leases) > 100_000:
            self._leases.clear()
        self._leases[name] = (got - 1.0, now + _LEASE_SECONDS)
        return True

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
