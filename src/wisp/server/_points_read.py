"""Bulk reads of numeric points as numpy columns (the export path), per database.

``read_points_*(conn, key_ids, lo, hi)`` returns ``(key_id, step, value, nf)`` arrays of the
points of ``key_ids`` with ``lo <= step <= hi``, ordered by (key_id, step); ``value`` is 0.0
where ``nf`` flags a non-finite number (the caller restores NaN/±inf).  PostgreSQL packs
each key's columns into ``bytea`` (one row per key, decoded by numpy views); SQLite reads
plain tuples through the DB-API cursor.  Bound parameters only.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

__all__ = ["read_points_pg", "read_points_sqlite"]

_COLS = "key_id, step, COALESCE(value, 0.0), nf"


def _empty() -> tuple[Any, Any, Any, Any]:
    import numpy as np

    return (
        np.empty(0, np.int64),
        np.empty(0, np.int64),
        np.empty(0, np.float64),
        np.empty(0, np.int16),
    )


def read_points_sqlite(
    conn: Connection, key_ids: list[int], lo: int, hi: int
) -> tuple[Any, Any, Any, Any]:
    import numpy as np

    raw: Any = conn.connection.driver_connection
    marks = ",".join("?" * len(key_ids))
    cur = raw.cursor()
    try:
        cur.execute(
            f"SELECT {_COLS} FROM points WHERE key_id IN ({marks}) AND step >= ? AND step <= ? "
            "ORDER BY key_id, step",
            [*key_ids, lo, hi],
        )
        rows = cur.fetchall()
    finally:
        cur.close()
    if not rows:
        return _empty()
    kid, step, nf = (np.array(c, dtype=np.int64) for c in _int_columns(rows))
    val = np.array([r[2] for r in rows], dtype=np.float64)
    return kid, step, val, nf.astype(np.int16)


def _int_columns(rows: list[Any]) -> tuple[list[int], list[int], list[int]]:
    """key_id, step and nf as exact ints (steps reach 2**62, past a float's precision)."""
    return [r[0] for r in rows], [r[1] for r in rows], [r[3] for r in rows]


_PG_SQL = """
SELECT k.id, a.st, a.va, a.nf
FROM unnest(CAST(%(ids)s AS int[])) AS k(id)
CROSS JOIN LATERAL (
  SELECT string_agg(int8send(s.step), '') AS st,
         string_agg(float8send(COALESCE(s.value, 0.0)), '') AS va,
         string_agg(int2send(s.nf), '') AS nf
  FROM (SELECT step, value, nf FROM points
        WHERE key_id = k.id AND step >= %(lo)s AND step <= %(hi)s ORDER BY step) AS s
) AS a
WHERE a.st IS NOT NULL
ORDER BY k.id
"""


def read_points_pg(
    conn: Connection, key_ids: list[int], lo: int, hi: int
) -> tuple[Any, Any, Any, Any]:
    """One row per key: its steps, values and flags packed by PostgreSQL into ``bytea``
    (``int8send``/``float8send``/``int2send`` aggregated in step order), viewed by numpy.

    Each key's points are read in primary-key order (an index scan, no sort), which the
    planner is told to prefer for this transaction.
    """
    import numpy as np

    raw: Any = conn.connection.driver_connection
    kids, steps, vals, nfs = [], [], [], []
    with raw.cursor(binary=True) as cur:  # bytea as bytes, not hex text
        cur.execute("SET LOCAL enable_bitmapscan = off")
        cur.execute(_PG_SQL, {"ids": key_ids, "lo": lo, "hi": hi})
        for kid, st, va, nf in cur:
            s = np.frombuffer(st, dtype=">i8").astype(np.int64)
            kids.append(np.full(len(s), kid, dtype=np.int64))
            steps.append(s)
            vals.append(np.frombuffer(va, dtype=">f8").astype(np.float64))
            nfs.append(np.frombuffer(nf, dtype=">i2").astype(np.int16))
    if not kids:
        return _empty()
    return np.concatenate(kids), np.concatenate(steps), np.concatenate(vals), np.concatenate(nfs)
