"""Bulk paths for numeric history: ``points`` rows and their 64-step ``blocks``.

Appends (every point of a record at a step not stored yet) are written with a
plain multi-row ``INSERT`` on SQLite or a binary ``COPY`` on PostgreSQL, and the
record's own block aggregates (computed during validation) are folded into
``blocks``.  If any point already exists the write falls back to a replacing
insert and the touched blocks are recomputed from ``points``.  Parameterised SQL only.
The store reaches the per-backend functions through :mod:`._dialect`.

Concurrency: SQLite runs one write transaction at a time (``BEGIN IMMEDIATE``).  On
PostgreSQL two writers of one run may ingest at once, and a block recomputed from a
snapshot that misses the other transaction's uncommitted points (or merged into by it
meanwhile) would go stale; their replacing inserts could also deadlock on ``points``.
So :func:`lock_series_pg` takes, at the start of the ingest transaction and before any
other write, transaction-scoped advisory locks on ``(hash(run), hash(key) % 64)`` for
every key the batch writes, in ascending order (no lock-order deadlock; at most 64
locks per transaction).  Writers of different keys, or of different runs, still
proceed in parallel.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from itertools import chain, repeat
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from wisp.server import _schema as S
from wisp.server._ingest import Column

__all__ = [
    "lock_series_pg",
    "merge_blocks_pg",
    "merge_blocks_sqlite",
    "update_blocks",
    "write_points_pg",
    "write_points_sqlite",
]


_LOCK_BUCKETS = 64
_LOCK_SQL = text(
    "SELECT pg_advisory_xact_lock(:r, b) FROM unnest(CAST(:bs AS int4[])) AS b ORDER BY b"
)


def _hash32(s: str) -> int:
    d = hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(d, "big", signed=True)


def lock_series_pg(conn: Connection, run_id: str, keys: set[str]) -> None:
    """PostgreSQL: lock ``keys`` of ``run_id`` for the rest of the transaction (see top)."""
    if not keys:
        return
    buckets = sorted({_hash32(k) % _LOCK_BUCKETS for k in keys})
    conn.execute(_LOCK_SQL, {"r": _hash32(run_id), "bs": buckets})


def merge_blocks_sqlite(conn: Connection, ids: dict[str, int], cols: list[Column]) -> None:
    """Fold the record's own block aggregates into ``blocks`` (its points were all new)."""
    rows = [(ids[c.key], *b) for c in cols for b in c.blocks or ()]
    raw: Any = conn.connection.driver_connection
    cur = raw.cursor()
    try:
        cur.executemany(_MERGE_BLOCKS_SQLITE, rows)
    finally:
        cur.close()


def merge_blocks_pg(conn: Connection, ids: dict[str, int], cols: list[Column]) -> None:
    """As :func:`merge_blocks_sqlite`: one statement over arrays, not a statement per block."""
    rows = [(ids[c.key], *b) for c in cols for b in c.blocks or ()]
    raw: Any = conn.connection.driver_connection
    with raw.cursor() as cur:
        cur.execute(_MERGE_BLOCKS_PG, [list(col) for col in zip(*rows, strict=True)])


def update_blocks(conn: Connection, ids: dict[str, int], cols: list[Column]) -> None:
    """Recompute, from ``points``, the 64-step blocks that ``cols`` touched."""
    B = S.BLOCK
    span: dict[int, tuple[int, int]] = {}
    for c in cols:
        k, lo, hi = ids[c.key], min(c.steps), max(c.steps)
        if k in span:
            lo, hi = min(lo, span[k][0]), max(hi, span[k][1])
        span[k] = (lo, hi)
    params = [{"k": k, "a": (lo // B) * B, "b": (hi // B + 1) * B} for k, (lo, hi) in span.items()]
    conn.execute(_BLOCKS_SQL, params)


def _rows(ids: dict[str, int], cols: list[Column]) -> Iterator[tuple[Any, ...]]:
    return chain.from_iterable(
        zip(repeat(ids[c.key]), c.steps, c.times, c.values, c.nfs or repeat(0)) for c in cols
    )


def write_points_sqlite(conn: Connection, ids: dict[str, int], cols: list[Column]) -> bool:
    """Insert the points; True when none of them replaced a stored point (nor each other)."""
    import sqlite3

    raw: Any = conn.connection.driver_connection
    sp = conn.begin_nested()
    cur = raw.cursor()
    try:
        _sqlite_insert_points(cur, list(chain.from_iterable(_rows(ids, cols))))
        sp.commit()
        return True
    except sqlite3.IntegrityError:
        sp.rollback()
        cur.executemany(
            "INSERT OR REPLACE INTO points (key_id, step, time, value, nf) VALUES (?,?,?,?,?)",
            _rows(ids, cols),
        )
        return False
    finally:
        cur.close()


def write_points_pg(conn: Connection, ids: dict[str, int], cols: list[Column]) -> bool:
    """As :func:`write_points_sqlite`, with binary ``COPY`` for the append."""
    import psycopg

    raw: Any = conn.connection.driver_connection
    sp = conn.begin_nested()
    try:
        with (
            raw.cursor() as cur,
            cur.copy(
                "COPY points (key_id, step, time, value, nf) FROM STDIN (FORMAT BINARY)"
            ) as cp,
        ):
            cp.write(_copy_binary(ids, cols))
        sp.commit()
        return True
    except psycopg.errors.UniqueViolation:
        sp.rollback()
    dedup = list({(r[0], r[1]): r for r in _rows(ids, cols)}.values())
    with raw.cursor() as cur:
        cur.executemany(
            "INSERT INTO points (key_id, step, time, value, nf) VALUES (%s,%s,%s,%s,%s) "
            "ON CONFLICT (key_id, step) DO UPDATE SET time = EXCLUDED.time, "
            "value = EXCLUDED.value, nf = EXCLUDED.nf",
            dedup,
        )
    return False


_BLOCKS_SQL = text(
    f"""
INSERT INTO blocks (key_id, blk, n, vmin, vmax, smin, smax, first_v, last_v, nonfinite)
SELECT g.key_id, g.blk, g.n, g.vmin, g.vmax, g.smin, g.smax,
  (SELECT p.value FROM points p WHERE p.key_id = g.key_id AND p.step = g.smin),
  (SELECT p.value FROM points p WHERE p.key_id = g.key_id AND p.step = g.smax),
  g.nonfinite
FROM (
  SELECT key_id, step / {S.BLOCK} AS blk, count(*) AS n, min(value) AS vmin,
    max(value) AS vmax, min(step) AS smin, max(step) AS smax,
    sum(CASE WHEN nf <> 0 THEN 1 ELSE 0 END) AS nonfinite
  FROM points WHERE key_id = :k AND step >= :a AND step < :b
  GROUP BY key_id, step / {S.BLOCK}
) g WHERE true
ON CONFLICT (key_id, blk) DO UPDATE SET n = excluded.n, vmin = excluded.vmin,
  vmax = excluded.vmax, smin = excluded.smin, smax = excluded.smax,
  first_v = excluded.first_v, last_v = excluded.last_v, nonfinite = excluded.nonfinite
"""
)


_MERGE_BLOCKS_SET = """
ON CONFLICT (key_id, blk) DO UPDATE SET n = blocks.n + excluded.n,
  vmin = CASE WHEN blocks.vmin IS NULL OR excluded.vmin < blocks.vmin
    THEN excluded.vmin ELSE blocks.vmin END,
  vmax = CASE WHEN blocks.vmax IS NULL OR excluded.vmax > blocks.vmax
    THEN excluded.vmax ELSE blocks.vmax END,
  first_v = CASE WHEN excluded.smin < blocks.smin THEN excluded.first_v ELSE blocks.first_v END,
  last_v = CASE WHEN excluded.smax > blocks.smax THEN excluded.last_v ELSE blocks.last_v END,
  smin = CASE WHEN excluded.smin < blocks.smin THEN excluded.smin ELSE blocks.smin END,
  smax = CASE WHEN excluded.smax > blocks.smax THEN excluded.smax ELSE blocks.smax END,
  nonfinite = blocks.nonfinite + excluded.nonfinite
"""
_BLOCK_COLS = "key_id, blk, n, vmin, vmax, smin, smax, first_v, last_v, nonfinite"
_MERGE_BLOCKS_SQLITE = (
    f"INSERT INTO blocks ({_BLOCK_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?) " + _MERGE_BLOCKS_SET
)
_MERGE_BLOCKS_PG = (
    f"INSERT INTO blocks ({_BLOCK_COLS}) SELECT * FROM unnest(%s::int4[], %s::int8[], "
    "%s::int4[], %s::float8[], %s::float8[], %s::int8[], %s::int8[], %s::float8[], "
    "%s::float8[], %s::int4[]) " + _MERGE_BLOCKS_SET
)

# PostgreSQL binary COPY rows of ``points``: 5 fields, each (length, big-endian value).
_COPY_HEAD = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_ROW_STRUCT = struct.Struct(">hiiiqididih")  # step at byte 14, time at 26, value at 38
_ROW, _ROW_SIZE = _ROW_STRUCT.pack, _ROW_STRUCT.size
_ROW_NULL = struct.Struct(">hiiiqidiih").pack


_MULTI_ROWS = 200  # rows per SQLite INSERT: far fewer statement steps (and GIL releases)


def _values_sql(n: int) -> str:
    return "INSERT INTO points (key_id, step, time, value, nf) VALUES " + ",".join(
        ["(?,?,?,?,?)"] * n
    )


_MULTI_SQL = _values_sql(_MULTI_ROWS)


def _sqlite_insert_points(cur: Any, flat: list[Any]) -> None:
    """Plain INSERT of ``flat`` (5 values per row), ``_MULTI_ROWS`` rows per statement."""
    n = len(flat) // 5
    full = n - n % _MULTI_ROWS
    step = 5 * _MULTI_ROWS
    if full:
        cur.executemany(_MULTI_SQL, [flat[i : i + step] for i in range(0, 5 * full, step)])
    if n > full:
        cur.execute(_values_sql(n - full), flat[5 * full :])


def _be(code: str, xs: Sequence[Any]) -> bytes:
    a = array(code, xs)
    if sys.byteorder == "little":
        a.byteswap()
    return a.tobytes()


def _copy_binary(ids: dict[str, int], cols: list[Column]) -> bytes:
    parts = [_COPY_HEAD]
    for c in cols:
        k = ids[c.key]
        if c.nfs is None:  # all finite: fill a row template with strided byte copies
            n = len(c.steps)
            buf = bytearray(_ROW(5, 4, k, 8, 0, 8, 0.0, 8, 0.0, 2, 0) * n)
            for off, data in (
                (14, _be("q", c.steps)),
                (26, _be("d", c.times)),
                (38, _be("d", c.values)),
            ):
                for j in range(8):
                    buf[off + j :: _ROW_SIZE] = data[j::8]
            parts.append(bytes(buf))
            continue
        for s, t, v, nf in zip(c.steps, c.times, c.values, c.nfs, strict=True):
            if v is None:
                parts.append(_ROW_NULL(5, 4, k, 8, s, 8, t, -1, 2, nf))
            else:
                parts.append(_ROW(5, 4, k, 8, s, 8, t, 8, v, 2, nf))
    parts.append(b"\xff\xff")
    return b"".join(parts)
