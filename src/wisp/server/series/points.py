"""Numeric history in ``chunks`` rows: the write path and the per-backend chunk SQL.

A batch's numeric points are written once per transaction, after its other records
(:func:`write_points`): per key, the stored chunks that the new steps fall into, and a
not-full chunk just before them, are read, merged with the new points (a rewritten step
replaces the stored one; of equal steps in the batch the last wins) and written back as
chunks of up to :data:`series.chunks.CHUNK` points; untouched chunks stay as they are.  The
merge itself is :func:`series.chunks.merge`; this module holds the SQL, one function per backend
where they differ, reached through :mod:`wisp.server.store.dialect`.  Bound parameters only.

Concurrency: SQLite runs one write transaction at a time (``BEGIN IMMEDIATE``).  On
PostgreSQL two writers of one run may ingest at once, and a chunk merged from a snapshot
that misses the other transaction's uncommitted rows would lose its points.  So
:func:`lock_series_pg` takes, at the start of the ingest transaction and before any other
write, transaction-scoped advisory locks on ``(hash(run), hash(key) % 64)`` for every key
the batch writes, in ascending order (no lock-order deadlock; at most 64 locks per
transaction).  Writers of different keys, or of different runs, still proceed in parallel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from wisp.server.series.chunks import ChunkRow, Stored, columns, merge
from wisp.server.store.ingest import Column

if TYPE_CHECKING:
    from wisp.server.store.dialect import Dialect

__all__ = [
    "AGG_COLS",
    "fetch_chunks_pg",
    "fetch_chunks_sqlite",
    "lock_series_pg",
    "write_chunks_pg",
    "write_chunks_sqlite",
    "write_points",
]

_LOCK_BUCKETS = 64
_LOCK_SQL = text(
    "SELECT pg_advisory_xact_lock(:r, b) FROM unnest(CAST(:bs AS int4[])) AS b ORDER BY b"
)
AGG_COLS = "key_id, s0, s1, n, vmin, vmax, first_v, last_v, nonfinite"
_ALL_COLS = AGG_COLS + ", data"
_COLSETS = {"agg": AGG_COLS, "all": _ALL_COLS, "merge": "key_id, s0, s1, n, data"}
Span = tuple[int, int, int]  # (key id, first step, last step)


def _hash32(s: str) -> int:
    d = hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(d, "big", signed=True)


def lock_series_pg(conn: Connection, run_id: str, keys: set[str]) -> None:
    """PostgreSQL: lock ``keys`` of ``run_id`` for the rest of the transaction (see top)."""
    if not keys:
        return
    buckets = sorted({_hash32(k) % _LOCK_BUCKETS for k in keys})
    conn.execute(_LOCK_SQL, {"r": _hash32(run_id), "bs": buckets})


# -- fetching chunks ------------------------------------------------------------------------
#
# For a span (k, a, b): the chunks of key k with s0 in [a, b], and the one before them (the
# greatest s0 <= a: it holds step a when its s1 >= a).  One index range per key.

_PG_FETCH = """
SELECT c.* FROM unnest(%(k)s::int8[], %(a)s::int8[], %(b)s::int8[]) AS q(k, a, b)
CROSS JOIN LATERAL (
  SELECT {cols} FROM chunks
  WHERE key_id = q.k AND s0 <= q.b
    AND s0 >= COALESCE((SELECT max(s0) FROM chunks WHERE key_id = q.k AND s0 <= q.a), q.a)
) c
ORDER BY c.key_id, c.s0
"""

_SQLITE_FETCH = (
    "SELECT {cols} FROM chunks WHERE key_id = ? AND s0 <= ? "
    "AND s0 >= COALESCE((SELECT max(s0) FROM chunks WHERE key_id = ? AND s0 <= ?), ?) "
    "ORDER BY s0"
)


def fetch_chunks_pg(conn: Connection, spans: Sequence[Span], cols: str) -> list[Any]:
    """Rows (``_COLSETS[cols]``) of the chunks of ``spans`` (see above), by key and s0."""
    if not spans:
        return []
    sql = _PG_FETCH.format(cols=_COLSETS[cols])
    raw: Any = conn.connection.driver_connection
    with raw.cursor(binary=True) as cur:  # bytea as bytes
        cur.execute(
            sql,
            {"k": [s[0] for s in spans], "a": [s[1] for s in spans], "b": [s[2] for s in spans]},
        )
        return list(cur.fetchall())


def fetch_chunks_sqlite(conn: Connection, spans: Sequence[Span], cols: str) -> list[Any]:
    """As :func:`fetch_chunks_pg`: one indexed query per key."""
    sql = _SQLITE_FETCH.format(cols=_COLSETS[cols])
    raw: Any = conn.connection.driver_connection
    out: list[Any] = []
    cur = raw.cursor()
    try:
        for k, a, b in sorted(spans):
            cur.execute(sql, (k, b, k, a, a))
            out.extend(cur.fetchall())
    finally:
        cur.close()
    return out


# -- writing chunks -------------------------------------------------------------------------

_UPSERT_SET = (
    "ON CONFLICT (key_id, s0) DO UPDATE SET s1 = excluded.s1, n = excluded.n, "
    "vmin = excluded.vmin, vmax = excluded.vmax, first_v = excluded.first_v, "
    "last_v = excluded.last_v, nonfinite = excluded.nonfinite, data = excluded.data"
)
_PG_UPSERT = (
    f"INSERT INTO chunks ({_ALL_COLS}) SELECT * FROM unnest(%s::int8[], %s::int8[], "
    "%s::int8[], %s::int4[], %s::float8[], %s::float8[], %s::float8[], %s::float8[], "
    "%s::int4[], %s::bytea[]) " + _UPSERT_SET
)
_PG_DELETE = (
    "DELETE FROM chunks WHERE (key_id, s0) IN (SELECT * FROM unnest(%s::int8[], %s::int8[]))"
)
_SQLITE_UPSERT = f"INSERT INTO chunks ({_ALL_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?) " + _UPSERT_SET


def write_chunks_pg(conn: Connection, rows: list[ChunkRow], deletes: list[tuple[int, int]]) -> None:
    """Delete the chunks ``(key_id, s0)`` of ``deletes``, then insert or replace ``rows``."""
    raw: Any = conn.connection.driver_connection
    with raw.cursor() as cur:
        if deletes:
            cur.execute(_PG_DELETE, [[d[0] for d in deletes], [d[1] for d in deletes]])
        if rows:
            cur.execute(
                _PG_UPSERT, [list(c) for c in zip(*(r.values() for r in rows), strict=True)]
            )


def write_chunks_sqlite(
    conn: Connection, rows: list[ChunkRow], deletes: list[tuple[int, int]]
) -> None:
    """As :func:`write_chunks_pg`."""
    raw: Any = conn.connection.driver_connection
    cur = raw.cursor()
    try:
        if deletes:
            cur.executemany("DELETE FROM chunks WHERE key_id = ? AND s0 = ?", deletes)
        if rows:
            cur.executemany(_SQLITE_UPSERT, [r.values() for r in rows])
    finally:
        cur.close()


# -- the write path -------------------------------------------------------------------------


_WRITE_ROWS = 512  # chunk rows per statement: a huge batch is written in slices


def write_points(
    dialect: Dialect,
    conn: Connection,
    ids: dict[str, int],
    cols: list[Column],
    pause: Callable[[], None] | None = None,
) -> None:
    """Write the points of ``cols`` (in record order: of equal steps of a key the last wins).

    Keys are merged one at a time and their rows written in slices of :data:`_WRITE_ROWS`,
    so a batch of millions of points holds one key's arrays and a slice of chunk rows at a
    time beside the batch itself.  ``pause()``, if given, is called before each key and
    each statement: a batch's merge is the longest stretch of ingest holding the GIL (half
    of it), and the server's reads go first (:mod:`wisp.server.readfirst`).
    """
    import numpy as np

    per_key: dict[int, list[Column]] = {}
    for c in cols:
        if len(c.steps):
            per_key.setdefault(ids[c.key], []).append(c)
    if not per_key:
        return
    spans: list[Span] = [
        (kid, min(min(c.steps) for c in cs), max(max(c.steps) for c in cs))
        for kid, cs in per_key.items()
    ]
    stored: dict[int, list[Stored]] = {}
    for kid, s0, s1, n, data in dialect.fetch_chunks(conn, spans, "merge"):
        stored.setdefault(kid, []).append(Stored(s0, s1, n, bytes(data)))
    pending: list[ChunkRow] = []  # merged rows not written yet
    deletes: list[tuple[int, int]] = []
    for kid, cs in per_key.items():
        if pause is not None:
            pause()
        parts = [columns(c.steps, c.times, c.values, c.nfs) for c in cs]
        new: tuple[Any, Any, Any] = parts[0]
        if len(parts) > 1:
            st, tm, vs = zip(*parts, strict=True)
            new = (np.concatenate(st), np.concatenate(tm), np.concatenate(vs))
        del parts
        rows, dels = merge(kid, new, stored.pop(kid, []))
        del new
        # rows of several keys go out together (a run's few short keys: one statement);
        # deletes never name a row this batch writes, so their order across keys is free
        deletes.extend((kid, s0) for s0 in dels)
        pending.extend(rows)
        del rows
        while len(pending) >= _WRITE_ROWS:
            dialect.write_chunks(conn, pending[:_WRITE_ROWS], deletes)
            del pending[:_WRITE_ROWS]
            deletes = []
    if pending or deletes:
        if pause is not None:
            pause()
        dialect.write_chunks(conn, pending, deletes)
