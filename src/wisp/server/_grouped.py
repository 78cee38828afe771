"""Runs grouped by config/metadata keys, and their metrics aggregated per group.

A project's runs (a filter, or a list of ids) are put in groups by the values of one or
more fields: a run column (``group``, ``job_type``, ``state``, ``name``, ``tags``) or a
path into ``config``, ``summary`` or ``metadata`` (``config.optimizer.lr``; missing values
make their own group).  Each metric is then read on one step grid shared by every run and
group — never the points themselves when the range is large: from the ``blocks`` table
(64 steps each), as the single-run series does — and each grid bucket gets, per run, the
last value in the bucket and the bucket's min and max; per group and bucket the answer
holds the mean, median, population standard deviation, min and max of the runs' values,
the number of runs with a value, and the min/max envelope of every point in the bucket.

The grid: ``width = ceil(span / buckets)`` steps from the first step, or, when a bucket
would hold more than one block, a whole number of blocks from a block boundary (so every
block falls in exactly one bucket and the result is exact).  When the runs hold more than
``MAX_POINTS`` points in a range that fine, the grid is one bucket per block instead (fewer
buckets than asked, never a point read one by one).  Only ``x = step``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, func, select

from wisp.server import _schema as S
from wisp.server._filter import field_path
from wisp.server._problem import Problem, invalid
from wisp.server._query import parse_filter

__all__ = ["MAX_RUNS", "group_fields", "group_runs", "grouped_series"]

MAX_RUNS = 1000
MAX_POINTS = 200_000  # read one by one below this; above, a bucket per 64-step block
_CHUNK = 900
_COLUMNS = {"group": "run_group", "job_type": "job_type", "state": "state", "name": "name"}


def group_fields(names: list[str]) -> list[tuple[str, list[str]]]:
    """``(column, path)`` for each group-by field; 422 naming ``group_by`` when unknown."""
    out: list[tuple[str, list[str]]] = []
    for name in names:
        if name in _COLUMNS or name == "tags":
            out.append((name, []))
            continue
        head, _, rest = name.partition(".")
        if head == "metadata" and rest:
            path = field_path("config." + rest)[1:]  # the same key-path rules
            out.append(("meta", path))
            continue
        try:
            path = field_path(name)
        except Problem:
            path = []
        if len(path) < 2:
            raise invalid(
                "group_by",
                f"unknown field {name!r}: expected group, job_type, state, name, tags, "
                "config.<key>, summary.<key> or metadata.<key>",
            )
        out.append((path[0], path[1:]))
    return out


def _walk(obj: Any, path: list[str]) -> Any:
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    if isinstance(obj, (dict, list)):
        return json.dumps(obj, sort_keys=True)  # groups by the whole value
    return obj


def _value(run: dict[str, Any], column: str, path: list[str]) -> Any:
    if column == "tags":
        return ",".join(sorted(run["tags"] or []))
    if column in _COLUMNS:
        return run[_COLUMNS[column]]
    return _walk(run[column], path)


def _sort_key(values: list[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v in values:
        if v is None:
            out.append((2, 0, ""))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append((0, v, ""))
        else:
            out.append((1, 0, str(v)))
    return tuple(out)


def group_runs(
    store: Any, project: str, group_by: list[str], filter_expr: str, runs: list[str] | None
) -> list[dict[str, Any]]:
    """The selected runs of ``project`` in groups (ordered by their values, missing last)."""
    fields = group_fields(group_by)
    r = S.runs.c
    cond = and_(r.project == project, parse_filter(store, filter_expr))
    if runs is not None:
        cond = and_(cond, r.id.in_(runs))
    cols = [r.id, r.name, r.run_group, r.job_type, store.state_expr().label("state"), r.tags]
    cols += [r.config, r.summary, r.meta]
    q = select(*cols).where(cond).order_by(r.created_at, r.id).limit(MAX_RUNS + 1)
    with store.engine.connect() as conn:
        rows = [dict(row._mapping) for row in conn.execute(q)]
    if len(rows) > MAX_RUNS:
        raise invalid("filter", f"more than {MAX_RUNS} runs selected: narrow the filter")
    groups: dict[str, dict[str, Any]] = {}
    for run in rows:
        values = [_value(run, c, p) for c, p in fields]
        label = json.dumps(values, default=str)
        g = groups.setdefault(label, {"values": values, "runs": [], "names": []})
        g["runs"].append(run["id"])
        g["names"].append(run["name"])
    return sorted(groups.values(), key=lambda g: _sort_key(g["values"]))


# -- the step grid ------------------------------------------------------------------------------


def _key_ids(conn: Any, runs: list[str], key: str) -> dict[int, str]:
    mk = S.metric_keys.c
    out: dict[int, str] = {}
    for i in range(0, len(runs), _CHUNK):
        q = select(mk.id, mk.run_id).where(mk.key == key, mk.run_id.in_(runs[i : i + _CHUNK]))
        out.update(conn.execute(q).all())
    return out


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def _range(conn: Any, ids: list[int], lo: float | None, hi: float | None) -> tuple[int, int] | None:
    """The first and last step of any of ``ids`` within [lo, hi]: from the blocks, and from
    the points of the one block at each end of the range that the range cuts."""
    bl, p = S.blocks.c, S.points.c
    B = S.BLOCK
    ilo = None if lo is None else math.ceil(lo)
    ihi = None if hi is None else math.floor(hi)
    firsts: list[int] = []
    lasts: list[int] = []
    for part in _chunks(ids):
        k = bl.key_id.in_(part)
        kp = p.key_id.in_(part)
        qs = [
            select(func.min(bl.smin)).where(k, *([] if ilo is None else [bl.blk > ilo // B])),
            select(func.max(bl.smax)).where(k, *([] if ihi is None else [bl.blk < ihi // B])),
        ]
        if ilo is not None:
            edge = [kp, p.step >= ilo, p.step < (ilo // B + 1) * B]
            qs.append(select(func.min(p.step)).where(*edge))
        if ihi is not None:
            edge = [kp, p.step <= ihi, p.step >= (ihi // B) * B]
            qs.append(select(func.max(p.step)).where(*edge))
        got = [conn.execute(q).scalar() for q in qs]
        firsts += [v for v in (got[0], got[2] if ilo is not None else None) if v is not None]
        lasts += [v for v in (got[1], got[-1] if ihi is not None else None) if v is not None]
    if not firsts or not lasts:
        return None
    s_lo, s_hi = min(firsts), max(lasts)
    if ilo is not None:
        s_lo = max(s_lo, ilo)
    if ihi is not None:
        s_hi = min(s_hi, ihi)
    return (s_lo, s_hi) if s_lo <= s_hi else None


def grid(s_lo: int, s_hi: int, buckets: int) -> tuple[int, int]:
    """``(origin, width)`` of the shared step grid (the module's rule)."""
    B = S.BLOCK
    span = s_hi - s_lo + 1
    if span <= buckets * B:
        return s_lo, -(-span // buckets)
    origin = (s_lo // B) * B
    width = -(-span // buckets)  # ceil
    width = -(-width // B) * B  # whole blocks
    while (s_hi - origin) // width >= buckets:
        width += B
    return origin, width


# One run's bucket: (last step, last value, min, max); values None when not finite.
Cell = tuple[int, Any, Any, Any]


def _merge(cells: dict[int, Cell], b: int, step: int, last: Any, vmin: Any, vmax: Any) -> None:
    c = cells.get(b)
    if c is None:
        cells[b] = (step, last, vmin, vmax)
        return
    s0, l0, mn, mx = c
    if vmin is not None and (mn is None or vmin < mn):
        mn = vmin
    if vmax is not None and (mx is None or vmax > mx):
        mx = vmax
    cells[b] = (step, last, mn, mx) if step >= s0 else (s0, l0, mn, mx)


def _count(conn: Any, ids: list[int], s_lo: int, s_hi: int) -> int:
    """About how many points ``ids`` hold in [s_lo, s_hi] (whole blocks, from ``blocks``)."""
    bl = S.blocks.c
    B = S.BLOCK
    total = 0
    for part in _chunks(ids):
        q = select(func.sum(bl.n)).where(
            bl.key_id.in_(part), bl.blk >= s_lo // B, bl.blk <= s_hi // B
        )
        total += int(conn.execute(q).scalar() or 0)
    return total


def _per_bucket(
    conn: Any, t: Any, pos: Any, last: Any, lo: Any, hi: Any, conds: list[Any], bucket: Any
) -> list[Any]:
    """``(key id, bucket, last position, last value, min, max)`` per key and bucket, folded
    in SQL: one GROUP BY, and the last value by the primary key of the bucket's last row."""
    b = bucket.label("b")
    g = (
        select(
            t.c.key_id,
            b,
            func.max(pos).label("m"),
            func.min(lo).label("mn"),
            func.max(hi).label("mx"),
        )
        .where(*conds)
        .group_by(t.c.key_id, b)
        .subquery()
    )
    t2 = t.alias("t2")
    q = select(g.c.key_id, g.c.b, g.c.m, t2.c[last.name], g.c.mn, g.c.mx).join(
        t2, and_(t2.c.key_id == g.c.key_id, t2.c[pos.name] == g.c.m)
    )
    return _rows(conn, q)


def _cells(
    conn: Any, ids: list[int], s_lo: int, s_hi: int, origin: int, width: int
) -> dict[int, dict[int, Cell]]:
    """Per key id, per bucket: the run's last value, min and max in the bucket."""
    B = S.BLOCK
    p, bl = S.points.c, S.blocks.c
    out: dict[int, dict[int, Cell]] = {k: {} for k in ids}
    if width % B == 0 and origin % B == 0:
        fb_lo, fb_hi = -(-s_lo // B), (s_hi + 1) // B - 1  # blocks wholly inside the range
        for part in _chunks(ids):
            if fb_lo <= fb_hi:
                conds = [bl.key_id.in_(part), bl.blk >= fb_lo, bl.blk <= fb_hi]
                bucket = (bl.blk * B - origin) // width
                rows = _per_bucket(
                    conn, S.blocks, bl.blk, bl.last_v, bl.vmin, bl.vmax, conds, bucket
                )
                for kid, bk, blk, last, mn, mx in rows:
                    out[kid][int(bk)] = (blk * B + B - 1, last, mn, mx)
            edge = select(p.key_id, p.step, p.value).where(
                p.key_id.in_(part), p.step >= s_lo, p.step <= s_hi
            )
            right = max(fb_hi + 1, fb_lo) * B
            edge = edge.where((p.step < fb_lo * B) | (p.step >= right))
            for kid, step, v in _rows(conn, edge):
                _merge(out[kid], (step - origin) // width, step, v, v, v)
        return out
    for part in _chunks(ids):
        conds = [p.key_id.in_(part), p.step >= s_lo, p.step <= s_hi]
        if width == 1:
            for kid, step, v in _rows(conn, select(p.key_id, p.step, p.value).where(*conds)):
                out[kid][step - origin] = (step, v, v, v)
            continue
        bucket = (p.step - origin) // width
        for kid, bk, step, last, mn, mx in _per_bucket(
            conn, S.points, p.step, p.value, p.value, p.value, conds, bucket
        ):
            out[kid][int(bk)] = (step, last, mn, mx)
    return out


def _rows(conn: Any, q: Any) -> list[Any]:
    """All rows of ``q`` as the driver's tuples: plain numbers need none of SQLAlchemy's
    per-row processing, which costs more than the folding for 100k rows."""
    res = conn.execute(q)
    cur = getattr(res, "cursor", None)
    rows: list[Any] = cur.fetchall() if cur is not None else res.all()
    res.close()
    return rows


STATS = ("mean", "median", "std", "min", "max", "lo", "hi")


def _aggregate(
    cells: list[dict[int, Cell]], origin: int, width: int, key: str, stats: tuple[str, ...]
) -> dict[str, Any]:
    acc: dict[int, list[Any]] = {}  # bucket -> [runs' last values, lo, hi]
    for c in cells:
        for b, (_st, last, mn, mx) in c.items():
            e = acc.get(b)
            if e is None:
                acc[b] = e = [[], mn, mx]
            else:
                if mn is not None and (e[1] is None or mn < e[1]):
                    e[1] = mn
                if mx is not None and (e[2] is None or mx > e[2]):
                    e[2] = mx
            if last is not None:
                e[0].append(last)
    order = sorted(acc)
    vals = [acc[b][0] for b in order]
    out: dict[str, Any] = {"key": key, "x": [origin + b * width for b in order]}
    out["n"] = [len(v) for v in vals]
    means = [sum(v) / len(v) if v else None for v in vals]
    if "mean" in stats:
        out["mean"] = means
    if "median" in stats:
        out["median"] = [_median(v) if v else None for v in vals]
    if "std" in stats:
        out["std"] = [
            math.sqrt(sum((x - m) * (x - m) for x in v) / len(v)) if v and m is not None else None
            for v, m in zip(vals, means, strict=True)
        ]
    if "min" in stats:
        out["min"] = [min(v) if v else None for v in vals]
    if "max" in stats:
        out["max"] = [max(v) if v else None for v in vals]
    if "lo" in stats:
        out["lo"] = [acc[b][1] for b in order]
    if "hi" in stats:
        out["hi"] = [acc[b][2] for b in order]
    return out


def _median(v: list[float]) -> float:
    n = len(v)
    if n == 1:
        return v[0]
    s = sorted(v)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def grouped_series(
    store: Any,
    project: str,
    *,
    keys: list[str],
    group_by: list[str],
    filter_expr: str = "",
    runs: list[str] | None = None,
    lo: float | None = None,
    hi: float | None = None,
    buckets: int = 1000,
    stats: tuple[str, ...] = STATS,
) -> dict[str, Any]:
    """The groups of the selected runs with each metric aggregated per group."""
    groups = group_runs(store, project, group_by, filter_expr, runs)
    all_runs = [rid for g in groups for rid in g["runs"]]
    grids: dict[str, Any] = {}
    per_key: dict[str, dict[str, dict[int, Cell]]] = {}
    with store.engine.connect() as conn:
        for key in keys:
            ids = _key_ids(conn, all_runs, key)
            rng = _range(conn, sorted(ids), lo, hi) if ids else None
            if rng is None:
                per_key[key] = {}
                grids[key] = None
                continue
            origin, width = grid(rng[0], rng[1], buckets)
            if width % S.BLOCK and _count(conn, sorted(ids), *rng) > MAX_POINTS:
                origin, width = (rng[0] // S.BLOCK) * S.BLOCK, S.BLOCK  # a bucket per block
            cells = _cells(conn, sorted(ids), rng[0], rng[1], origin, width)
            per_key[key] = {ids[k]: v for k, v in cells.items()}
            grids[key] = {"origin": origin, "width": width, "first": rng[0], "last": rng[1]}
    out_groups = []
    for g in groups:
        series = []
        for key in keys:
            gr = grids[key]
            mine = [per_key[key][rid] for rid in g["runs"] if rid in per_key[key]]
            if gr is None or not mine:
                continue
            s = _aggregate(mine, gr["origin"], gr["width"], key, stats)
            s["runs"] = len(mine)
            series.append(s)
        out_groups.append(
            {
                "values": g["values"],
                "label": ", ".join(_label(v) for v in g["values"]) or "all runs",
                "runs": g["runs"],
                "names": g["names"],
                "series": series,
            }
        )
    return {
        "group_by": group_by,
        "runs": len(all_runs),
        "grids": [{"key": k, **v} for k, v in grids.items() if v is not None],
        "groups": out_groups,
    }


def _label(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, float):
        return repr(v)
    return str(v)
