"""Metric series (downsampled in SQL) and full-history export.

Series against ``x=step`` never leave the database in full: the step range is
split into ``buckets`` equal buckets, one ``GROUP BY`` computes each bucket's
count, min, max and first/last step, and one indexed lookup fetches the first
and last values.  Other x axes (``time``, ``relative``, a step metric) are
joined and bucketed in Python with the same rules.

``gaps`` counts, per returned x, the values of that bucket that are no finite number:
NaN and infinities (stored as points with ``nf``) and ``None`` or text logged under a
numeric key (stored in ``extras``).  A key with such non-numeric values is bucketed in
Python, with the non-numeric steps as points without a value, so a chart breaks its
line there.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from typing import Any

from sqlalchemy import case, func, or_, select

from wisp.server import _schema as S

__all__ = ["export_history", "series"]

_NFV = {1: math.nan, 2: math.inf, 3: -math.inf}
_CHUNK = 900


def _key_ids(conn: Any, run_id: str, keys: list[str] | None) -> dict[str, int]:
    mk = S.metric_keys.c
    q = select(mk.key, mk.id).where(mk.run_id == run_id)
    out: dict[str, int] = {}
    if keys is None:
        return dict(conn.execute(q).all())
    for i in range(0, len(keys), _CHUNK):
        out.update(conn.execute(q.where(mk.key.in_(keys[i : i + _CHUNK]))).all())
    return out


def _raw(xs: list[Any], ys: list[Any], gaps: list[int] | None = None) -> dict[str, Any]:
    g = gaps if gaps and any(gaps) else None
    return {"x": xs, "y": ys, "min": ys, "max": ys, "first": ys, "last": ys, "raw": True, "gaps": g}


def _step_series(
    conn: Any, kid: int, lo: float | None, hi: float | None, after: float | None, buckets: int
) -> dict[str, Any]:
    p = S.points.c
    conds = [p.key_id == kid]
    if lo is not None:
        conds.append(p.step >= math.ceil(lo))
    if hi is not None:
        conds.append(p.step <= math.floor(hi))
    if after is not None:
        conds.append(p.step > math.floor(after))
    s_lo = conn.execute(select(func.min(p.step)).where(*conds)).scalar()
    if s_lo is None:
        return {**_raw([], []), "count": 0, "nonfinite": 0, "nonnumeric": 0}
    s_hi = conn.execute(select(func.max(p.step)).where(*conds)).scalar()
    span = s_hi - s_lo + 1
    if span > buckets * S.BLOCK:
        return _block_series(conn, kid, conds, s_lo, s_hi, buckets)
    bucket = (
        ((p.step - s_lo) * buckets) // span
        if span * buckets < (1 << 62)
        else func.floor((p.step - s_lo) * (buckets / span))
    ).label("b")
    nonfin = func.sum(case((p.nf != 0, 1), else_=0))
    agg = conn.execute(
        select(
            bucket,
            func.count(),
            func.min(p.value),
            func.max(p.value),
            func.min(p.step),
            func.max(p.step),
            nonfin,
        )
        .where(*conds)
        .group_by(bucket)
        .order_by(bucket)
    ).all()
    count = sum(a[1] for a in agg)
    nonfinite = int(sum(a[6] or 0 for a in agg))
    if count <= buckets:
        return _raw_rows(conn, conds, count, nonfinite)
    wanted = sorted({a[4] for a in agg} | {a[5] for a in agg})
    vals: dict[int, float | None] = {}
    for i in range(0, len(wanted), _CHUNK):
        part = wanted[i : i + _CHUNK]
        vals.update(
            conn.execute(select(p.step, p.value).where(p.key_id == kid, p.step.in_(part))).all()
        )
    return {
        "x": [a[4] for a in agg],
        "y": [vals.get(a[5]) for a in agg],
        "min": [a[2] for a in agg],
        "max": [a[3] for a in agg],
        "first": [vals.get(a[4]) for a in agg],
        "last": [vals.get(a[5]) for a in agg],
        "raw": False,
        "count": count,
        "nonfinite": nonfinite,
        "nonnumeric": 0,
        "gaps": [int(a[6] or 0) for a in agg] if nonfinite else None,
    }


def _raw_rows(conn: Any, conds: list[Any], count: int, nonfinite: int) -> dict[str, Any]:
    p = S.points.c
    rows = conn.execute(select(p.step, p.value, p.nf).where(*conds).order_by(p.step)).all()
    gaps = [1 if r[2] else 0 for r in rows] if nonfinite else None
    return {
        **_raw([r[0] for r in rows], [r[1] for r in rows], gaps),
        "count": count,
        "nonfinite": nonfinite,
        "nonnumeric": 0,
    }


def _block_series(
    conn: Any, kid: int, conds: list[Any], s_lo: int, s_hi: int, buckets: int
) -> dict[str, Any]:
    """Buckets whose width is a multiple of the block size, aggregated from ``blocks``.

    The bucket origin is aligned down to a block and the width rounded up to whole
    blocks, so every block falls in exactly one bucket and the result is exact.
    Points of partly covered blocks at the range ends are read one by one.
    """
    B = S.BLOCK
    p, bl = S.points.c, S.blocks.c
    origin = (s_lo // B) * B
    width = -(-(s_hi - s_lo + 1) // buckets)
    width = -(-width // B) * B
    while (s_hi - origin) // width >= buckets:
        width += B
    fb_lo, fb_hi = -(-s_lo // B), (s_hi + 1) // B - 1
    Entry = tuple[int, int, int, Any, Any, Any, Any, int]
    entries: list[Entry] = []
    edge_q = select(p.step, p.value, p.nf).order_by(p.step)
    for step, v, nf in conn.execute(edge_q.where(*conds, p.step < fb_lo * B)):
        entries.append((step, step, 1, v, v, v, v, 1 if nf else 0))
    if fb_lo <= fb_hi:
        q = (
            select(bl.smin, bl.smax, bl.n, bl.vmin, bl.vmax, bl.first_v, bl.last_v, bl.nonfinite)
            .where(bl.key_id == kid, bl.blk >= fb_lo, bl.blk <= fb_hi)
            .order_by(bl.blk)
        )
        entries.extend(tuple(r) for r in conn.execute(q))
    right = max(fb_hi + 1, fb_lo) * B
    for step, v, nf in conn.execute(edge_q.where(*conds, p.step >= right)):
        entries.append((step, step, 1, v, v, v, v, 1 if nf else 0))
    count = sum(e[2] for e in entries)
    nonfinite = sum(e[7] for e in entries)
    if count <= buckets:
        return _raw_rows(conn, conds, count, nonfinite)
    xs: list[int] = []
    mins: list[Any] = []
    maxs: list[Any] = []
    firsts: list[Any] = []
    lasts: list[Any] = []
    gaps: list[int] = []
    cur = -1
    for smin, _smax, _n, vmin, vmax, fv, lv, nf in entries:
        b = (smin - origin) // width
        if b != cur:
            cur = b
            xs.append(smin)
            mins.append(vmin)
            maxs.append(vmax)
            firsts.append(fv)
            lasts.append(lv)
            gaps.append(nf)
            continue
        lasts[-1] = lv
        gaps[-1] += nf
        if vmin is not None and (mins[-1] is None or vmin < mins[-1]):
            mins[-1] = vmin
        if vmax is not None and (maxs[-1] is None or vmax > maxs[-1]):
            maxs[-1] = vmax
    return {
        "x": xs,
        "y": lasts,
        "min": mins,
        "max": maxs,
        "first": firsts,
        "last": lasts,
        "raw": False,
        "count": count,
        "nonfinite": nonfinite,
        "nonnumeric": 0,
        "gaps": gaps if nonfinite else None,
    }


_NONNUMERIC = 4  # the flag of a None or text value among the points bucketed in Python


def _py_downsample(pts: list[tuple[float, float | None, int]], buckets: int) -> dict[str, Any]:
    """Bucket (x, y, flag) points sorted by x, with the rules of the SQL path.

    ``flag`` is the point's ``nf`` code, or ``_NONNUMERIC`` for None or text."""
    nonnumeric = sum(1 for p in pts if p[2] == _NONNUMERIC)
    nonfinite = sum(1 for p in pts if p[2]) - nonnumeric
    counts = {"count": len(pts) - nonnumeric, "nonfinite": nonfinite, "nonnumeric": nonnumeric}
    if len(pts) <= buckets:
        return {
            **_raw([p[0] for p in pts], [p[1] for p in pts], [1 if p[2] else 0 for p in pts]),
            **counts,
        }
    lo, hi = pts[0][0], pts[-1][0]
    width = (hi - lo) / buckets or 1.0
    out: dict[str, Any] = {k: [] for k in ("x", "y", "min", "max", "first", "last", "gaps")}
    cur = -1
    for x, y, flag in pts:
        b = min(int((x - lo) / width), buckets - 1)
        if b != cur:
            cur = b
            out["x"].append(x)
            out["first"].append(y)
            out["y"].append(y)
            out["last"].append(y)
            out["min"].append(y)
            out["max"].append(y)
            out["gaps"].append(0)
        else:
            out["y"][-1] = out["last"][-1] = y
        if flag:
            out["gaps"][-1] += 1
        if y is not None:
            mn, mx = out["min"][-1], out["max"][-1]
            out["min"][-1] = y if mn is None or y < mn else mn
            out["max"][-1] = y if mx is None or y > mx else mx
    if not nonfinite + nonnumeric:
        out["gaps"] = None
    return {**out, "raw": False, **counts}


def _other_series(
    conn: Any,
    kid: int,
    xid: int | None,
    x: str,
    offset: float,
    lo: float | None,
    hi: float | None,
    after: float | None,
    buckets: int,
    holes: list[tuple[int, float]] | None = None,
) -> dict[str, Any]:
    """Points joined with their x (step, time - offset or a step metric) and bucketed here;
    ``holes`` are the steps (and times) of non-numeric values, added without a value."""
    p = S.points.c
    rows = conn.execute(
        select(p.step, p.time, p.value, p.nf).where(p.key_id == kid).order_by(p.step)
    ).all()
    xmap: dict[int, float] | None = None
    if xid is not None:
        xmap = dict(
            conn.execute(select(p.step, p.value).where(p.key_id == xid, p.value.is_not(None))).all()
        )
    pts: list[tuple[float, float | None, int]] = []
    allrows = [*rows, *((st, t, None, _NONNUMERIC) for st, t in holes or [])]
    for step, t, v, nf in allrows:
        if xmap is not None:
            xv = xmap.get(step)
            if xv is None:
                continue
        elif x == "step":
            xv = step
        else:
            xv = t - offset
        if (lo is not None and xv < lo) or (hi is not None and xv > hi):
            continue
        if after is not None and xv <= after:
            continue
        pts.append((xv, v, nf))
    pts.sort(key=lambda q: q[0])
    return _py_downsample(pts, buckets)


def _holes(
    conn: Any, run_id: str, keys: list[str], lo: float | None, hi: float | None
) -> dict[str, list[tuple[int, float]]]:
    """Steps (and times) where a requested key was logged as None or text, by key.

    Only runs that logged such values have ``extras`` rows; the rest cost one lookup."""
    e = S.extras.c
    conds = [e.run_id == run_id]
    if lo is not None:
        conds.append(e.step >= math.ceil(lo))
    if hi is not None:
        conds.append(e.step <= math.floor(hi))
    if conn.execute(select(e.step).where(*conds).limit(1)).first() is None:
        return {}
    out: dict[str, list[tuple[int, float]]] = {}
    want = set(keys)
    for i in range(0, len(keys), 50):
        like = [e.data.contains(json.dumps(k), autoescape=True) for k in keys[i : i + 50]]
        for step, t, data in conn.execute(select(e.step, e.time, e.data).where(*conds, or_(*like))):
            for k, v in json.loads(data).items():
                if k in want and not isinstance(v, dict):
                    out.setdefault(k, []).append((step, t))
    return {k: sorted(set(v)) for k, v in out.items()}


def series(
    store: Any,
    runs: list[str],
    keys: list[str],
    *,
    x: str = "step",
    lo: float | None = None,
    hi: float | None = None,
    after: float | None = None,
    buckets: int = 1000,
) -> list[dict[str, Any]]:
    """Series for every (run, key) that exists, in the order asked."""
    out = []
    with store.engine.connect() as conn:
        for run_id in runs:
            want = [*keys, x] if x not in ("step", "time", "relative") else keys
            ids = _key_ids(conn, run_id, want)
            offset = 0.0
            if x == "relative":
                offset = (
                    conn.execute(select(S.runs.c.created_at).where(S.runs.c.id == run_id)).scalar()
                    or 0.0
                )
            have = [k for k in keys if k in ids]
            bounds = [v for v in (lo, after) if v is not None] if x == "step" else []
            step_hi = hi if x == "step" else None
            holes = _holes(conn, run_id, have, max(bounds, default=None), step_hi)
            for key in have:
                kid = ids[key]
                hk = holes.get(key, [])
                if x == "step" and not hk:
                    s = _step_series(conn, kid, lo, hi, after, buckets)
                elif x in ("step", "time", "relative"):
                    s = _other_series(conn, kid, None, x, offset, lo, hi, after, buckets, hk)
                else:
                    xid = ids.get(x)
                    if xid is None:
                        continue
                    s = _other_series(conn, kid, xid, x, 0.0, lo, hi, after, buckets, hk)
                out.append({"run": run_id, "key": key, **s})
    return out


def _history_rows(
    store: Any, run_id: str, keys: list[str] | None
) -> tuple[list[str], Iterator[tuple[int, float, dict[str, Any]]]]:
    """All keys, and the run's rows ``(step, time, {key: value})`` in step order."""
    p, e, m = S.points.c, S.extras.c, S.media_items.c
    with store.engine.connect() as conn:
        ids = _key_ids(conn, run_id, keys)
        names = {v: k for k, v in ids.items()}
        allkeys = set(ids)
        mq = select(m.key).where(m.run_id == run_id).distinct()
        allkeys.update(conn.execute(mq).scalars())
        for (data,) in conn.execute(select(e.data).where(e.run_id == run_id)):
            allkeys.update(json.loads(data))
    if keys is not None:
        allkeys &= set(keys)
    id_list = sorted(names)

    def bounds(conn: Any, start: int) -> int | None:
        cands = [
            conn.execute(select(func.min(e.step)).where(e.run_id == run_id, e.step >= start)),
            conn.execute(select(func.min(m.step)).where(m.run_id == run_id, m.step >= start)),
        ]
        if id_list:
            cands.append(
                conn.execute(select(func.min(p.step)).where(p.key_id.in_(id_list), p.step >= start))
            )
        vals = [c.scalar() for c in cands]
        good = [v for v in vals if v is not None]
        return min(good) if good else None

    def rows() -> Iterator[tuple[int, float, dict[str, Any]]]:
        width = 2000
        with store.engine.connect() as conn:
            cur = bounds(conn, 0)
            while cur is not None:
                end = cur + width
                acc: dict[int, tuple[float, dict[str, Any]]] = {}
                if id_list:
                    q = select(p.step, p.time, p.key_id, p.value, p.nf).where(
                        p.key_id.in_(id_list), p.step >= cur, p.step < end
                    )
                    for step, t, kid, v, nf in conn.execute(q):
                        acc.setdefault(step, (t, {}))[1][names[kid]] = _NFV[nf] if nf else v
                q2 = select(e.step, e.time, e.data).where(
                    e.run_id == run_id, e.step >= cur, e.step < end
                )
                for step, t, data in conn.execute(q2):
                    d = json.loads(data)
                    acc.setdefault(step, (t, {}))[1].update(
                        d if keys is None else {k: v for k, v in d.items() if k in allkeys}
                    )
                q3 = select(m.step, m.time, m.key, m.data).where(
                    m.run_id == run_id, m.step >= cur, m.step < end
                )
                for step, t, k, data in conn.execute(q3):
                    if keys is None or k in allkeys:
                        acc.setdefault(step, (t, {}))[1][k] = data
                for step in sorted(acc):
                    t, vals = acc[step]
                    if vals:
                        yield step, t, vals
                cur = bounds(conn, end)

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


def export_history(store: Any, run_id: str, fmt: str, keys: list[str] | None) -> Iterator[str]:
    """History rows as JSON lines (``_step``, ``_timestamp`` + values) or CSV, in chunks."""
    cols, rows = _history_rows(store, run_id, keys)
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
    w.writerow(["_step", "_timestamp", *cols])
    for n, (step, t, vals) in enumerate(rows, 1):
        w.writerow([step, t, *(_csv_cell(vals.get(c)) for c in cols)])
        if n % 1000 == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()
