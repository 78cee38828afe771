"""Bulk reads of numeric points as numpy columns, decoded from ``chunks`` rows.

``read_points(dialect, conn, key_ids, lo, hi)`` returns ``(key_id, step, value)`` arrays of
the points of ``key_ids`` with ``lo <= step <= hi``, ordered by (key_id, step); ``value``
holds NaN/+-inf as logged.  One query fetches every chunk that meets the range (an index
range per key, see :mod:`series.points`), and :func:`series.chunks.decode_many` decodes them
together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection

from wisp.server.series.chunks import decode_many

if TYPE_CHECKING:
    from wisp.server.store.dialect import Dialect

__all__ = ["last_at", "read_chunks", "read_points", "read_spans"]

MAX = (1 << 63) - 1


def read_chunks(
    dialect: Dialect,
    conn: Connection,
    key_ids: list[int],
    lo: int,
    hi: int,
    with_times: bool = False,
    clip: bool = True,
) -> tuple[Any, Any, Any, Any]:
    """(key_id, step, time or None, value) of the chunks meeting ``[lo, hi]``, by key and step.

    ``clip=False`` keeps the points of those chunks that lie outside the range.
    """
    import numpy as np

    rows = dialect.fetch_chunks(conn, [(k, lo, hi) for k in key_ids], "merge")
    rows = [r for r in rows if r[2] >= lo]  # the chunk before the range ends before it
    steps, times, values = decode_many([bytes(r[4]) for r in rows], with_times)
    kid = np.repeat(
        np.fromiter((r[0] for r in rows), np.int64, len(rows)),
        np.fromiter((r[3] for r in rows), np.int64, len(rows)),
    )
    if clip and rows:
        sel = (steps >= lo) & (steps <= hi)
        if not sel.all():
            kid, steps, values = kid[sel], steps[sel], values[sel]
            times = times[sel] if times is not None else None
    return kid, steps, times, values


def read_points(
    dialect: Dialect, conn: Connection, key_ids: list[int], lo: int, hi: int
) -> tuple[Any, Any, Any]:
    """(key_id, step, value) of ``key_ids`` in ``[lo, hi]`` (see the module docstring)."""
    kid, steps, _times, values = read_chunks(dialect, conn, key_ids, lo, hi)
    return kid, steps, values


# -- chunk spans (grouped series) ---------------------------------------------------------------


def read_spans(
    dialect: Dialect, conn: Connection, spans: list[tuple[int, int, int]]
) -> tuple[Any, Any, Any]:
    """(key_id, step, value) of every point of the chunks of ``spans``, by key and step.

    A span ``(key id, a, b)`` names the chunks of the key that start in ``[a, b]``, ``a``
    itself a chunk start (``(k, s0, s0)`` is the one chunk at ``s0``); spans do not overlap.
    """
    import numpy as np

    rows = dialect.fetch_chunks(conn, spans, "merge")
    steps, _times, values = decode_many([bytes(r[4]) for r in rows], False)
    kid = np.repeat(
        np.fromiter((r[0] for r in rows), np.int64, len(rows)),
        np.fromiter((r[3] for r in rows), np.int64, len(rows)),
    )
    return kid, steps, values


def last_at(
    dialect: Dialect, conn: Connection, key_id: int, step: int
) -> tuple[int, float, float] | None:
    """(step, time, value) of the last point of ``key_id`` at or before ``step`` in the chunk
    holding ``step`` or the one before it (one chunk read), or None."""
    from wisp.server.series.chunks import decode

    rows = [r for r in dialect.fetch_chunks(conn, [(key_id, step, step)], "merge") if r[1] <= step]
    if not rows:
        return None
    st, tm, vs = decode(bytes(rows[-1][4]))
    at = st <= step
    if not at.any():
        return None
    return int(st[at][-1]), float(tm[at][-1]), float(vs[at][-1])
