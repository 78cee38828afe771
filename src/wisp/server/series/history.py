"""A run's full history as rows, streamed as JSON lines or CSV (``GET /runs/{id}/history``).

Rows ``(step, time, {key: value})`` in step order: the numeric points of the chunks, the
non-numeric values of ``extras`` and the typed values of ``media_items``, read in windows of
2000 steps.  A fork's history is its view (``store.lineage.view_segments``): its parents'
rows up to the fork step, then its own.  What a rewind set aside is read the same way,
under its shadow key (``GET /runs/{id}/set-aside/{rewind}/history``).
"""

from __future__ import annotations

import bisect
import csv
import io
import json
import math
from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, select

from wisp.server.series.buckets import _key_ids
from wisp.server.series.read import MAX as _MAX
from wisp.server.series.read import read_chunks
from wisp.server.store import lineage
from wisp.server.store import schema as S

__all__ = ["export_history"]


def _history_rows(
    store: Any, run_id: str, keys: list[str] | None, lo: int = 0, hi: int = _MAX
) -> tuple[list[str], Iterator[tuple[int, float, dict[str, Any]]]]:
    """All keys, and the run's own rows ``(step, time, {key: value})`` with a step in
    ``[lo, hi]``, in step order."""
    import numpy as np

    e, m = S.extras.c, S.media_items.c
    d = store.dialect
    with store.engine.connect() as conn:
        ids = _key_ids(conn, run_id, keys)
        names = {v: k for k, v in ids.items()}
        allkeys = set(ids)
        mq = select(m.key).where(m.run_id == run_id).distinct()
        allkeys.update(conn.execute(mq).scalars())
        for (data,) in conn.execute(select(e.data).where(e.run_id == run_id)):
            allkeys.update(json.loads(data))
        # where each chunk starts: the next numeric step is found without decoding
        starts = sorted(
            r[1] for r in d.fetch_chunks(conn, [(k, 0, _MAX) for k in ids.values()], "agg")
        )
    if keys is not None:
        allkeys &= set(keys)
    id_list = sorted(names)

    def bounds(conn: Any, start: int, later: list[int]) -> int | None:
        """The first step >= start of any value (``later``: decoded steps >= start)."""
        cands = [
            conn.execute(select(func.min(e.step)).where(e.run_id == run_id, e.step >= start)),
            conn.execute(select(func.min(m.step)).where(m.run_id == run_id, m.step >= start)),
        ]
        vals = [c.scalar() for c in cands]
        i = bisect.bisect_left(starts, start)
        vals += [starts[i] if i < len(starts) else None, *later[:1]]
        good = [v for v in vals if v is not None]
        return min(good) if good else None

    def rows() -> Iterator[tuple[int, float, dict[str, Any]]]:
        width = 2000
        with store.engine.connect() as conn:
            cur = bounds(conn, lo, [])
            while cur is not None and cur <= hi:
                end = min(cur + width, hi + 1)
                acc: dict[int, tuple[float, dict[str, Any]]] = {}
                later: list[int] = []
                if id_list:
                    kid, st, tm, vals = read_chunks(d, conn, id_list, cur, end - 1, True, False)
                    past = st >= end
                    if past.any():
                        later = [int(st[past].min())]
                    sel = (st >= cur) & ~past
                    order = np.argsort(st[sel], kind="stable")
                    cols = (st[sel][order], tm[sel][order], kid[sel][order], vals[sel][order])
                    for step, t, k, v in zip(*(c.tolist() for c in cols), strict=True):
                        acc.setdefault(step, (t, {}))[1][names[k]] = v
                q2 = select(e.step, e.time, e.data).where(
                    e.run_id == run_id, e.step >= cur, e.step < end
                )
                for step, t, data in conn.execute(q2):
                    dd = json.loads(data)
                    acc.setdefault(step, (t, {}))[1].update(
                        dd if keys is None else {k: v for k, v in dd.items() if k in allkeys}
                    )
                q3 = select(m.step, m.time, m.key, m.data).where(
                    m.run_id == run_id, m.step >= cur, m.step < end
                )
                for step, t, k, data in conn.execute(q3):
                    if keys is None or k in allkeys:
                        acc.setdefault(step, (t, {}))[1][k] = data
                for step in sorted(acc):
                    t, vals_ = acc[step]
                    if vals_:
                        yield step, t, vals_
                cur = bounds(conn, end, later)

    return sorted(allkeys), rows()


def _csv_cell(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if isinstance(v, (dict, list, bool)) or v is None:
        v = "" if v is None else json.dumps(v, allow_nan=True)
    if isinstance(v, str) and v[:1] in _FORMULA:
        return "'" + v  # a spreadsheet would run =..., +..., -..., @... as a formula
    return v


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _view_rows(
    store: Any, run_id: str, keys: list[str] | None
) -> tuple[list[str], Iterator[tuple[int, float, dict[str, Any]]]]:
    """:func:`_history_rows` over a fork's view: each segment's rows in turn."""
    with store.engine.connect() as conn:
        segs = lineage.view_segments(conn, run_id)
    if len(segs) < 2:
        return _history_rows(store, run_id, keys)
    parts = [_history_rows(store, seg, keys, a, b) for seg, a, b in segs]
    cols = sorted({c for got, _rows in parts for c in got})
    return cols, (row for _cols, rows in parts for row in rows)


def export_history(store: Any, run_id: str, fmt: str, keys: list[str] | None) -> Iterator[str]:
    """History rows as JSON lines (``_step``, ``_timestamp`` + values) or CSV, in chunks (a
    fork's: its view)."""
    cols, rows = _view_rows(store, run_id, keys)
    if fmt == "jsonl":
        buf: list[str] = []
        for step, t, vals in rows:
            buf.append(json.dumps({"_step": step, "_timestamp": t, **vals}, allow_nan=True))
            if len(buf) >= 1000:
                yield "\n".join(buf) + "\n"
                buf = []
        if buf:
            yield "\n".join(buf) + "\n"
        return
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["_step", "_timestamp", *(_csv_cell(c) for c in cols)])  # keys too
    for n, (step, t, vals) in enumerate(rows, 1):
        w.writerow([step, t, *(_csv_cell(vals.get(c)) for c in cols)])
        if n % 1000 == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()
