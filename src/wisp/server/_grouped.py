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
                q = select(bl.key_id, bl.smax, bl.last_v, bl.vmin, bl.vmax).where(
                    bl.key_id.in_(part), bl.blk >= fb_lo, bl.blk <= fb_hi
                )
                _fold(out, _rows(conn, q.order_by(bl.key_id, bl.blk)), origin, width)
            edge = select(p.key_id, p.step, p.value, p.value, p.value).where(
                p.key_id.in_(part), p.step >= s_lo, p.step <= s_hi
            )
            right = max(fb_hi + 1, fb_lo) * B
            edge = edge.where((p.step < fb_lo * B) | (p.step >= right))
            for kid, step, v, _v1, _v2 in conn.execute(edge).all():
                _merge(out[kid], (step - origin) // width, step, v, v, v)
        return out
    for part in _chunks(ids):  # few points: read them (in step order per key)
        q = select(p.key_id, p.step, p.value, p.value, p.value).where(
            p.key_id.in_(part), p.step >= s_lo, p.step <= s_hi
        )
        _fold(out, _rows(conn, q.order_by(p.key_id, p.step)), origin, width)
    return out


def _rows(conn: Any, q: Any) -> list[Any]:
    """All rows of ``q`` as the driver's tuples: plain numbers need none of SQLAlchemy's
    per-row processing, which costs more than the folding for 100k rows."""
    res = conn.execute(q)
    cur = getattr(res, "cursor", None)
    rows: list[Any] = cur.fetchall() if cur is not None else res.all()
    res.close()
    return rows


def _fold(out: dict[int, dict[int, Cell]], rows: list[Any], origin: int, width: int) -> None:
    """Fold rows ``(key id, step, last, min, max)`` sorted by key and step into buckets."""
    cur_k, cur_b = -1, -1
    cells: dict[int, Cell] = {}
    last_s, last_v, mn, mx = 0, None, None, None
    for kid, step, v, lo, hi in rows:
        b = (step - origin) // width
        if kid != cur_k or b != cur_b:
            if cur_k >= 0:
                cells[cur_b] = (last_s, last_v, mn, mx)
            if kid != cur_k:
                cells = out[kid]
            cur_k, cur_b, mn, mx = kid, b, lo, hi
        else:
            if lo is not None and (mn is None or lo < mn):
                mn = lo
            if hi is not None and (mx is None or hi > mx):
                mx = hi
        last_s, last_v = step, v
    if cur_k >= 0:
        cells[cur_b] = (last_s, last_v, mn, mx)


def _stats(xs: list[float]) -> tuple[float, float, float, float, float]:
    """mean, median, population std, min, max of a non-empty list."""
    n = len(xs)
    if n == 1:
        x = xs[0]
        return x, x, 0.0, x, x
    mean = sum(xs) / n
    s = sorted(xs)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    var = sum((x - mean) * (x - mean) for x in xs) / n
    return mean, med, math.sqrt(var), s[0], s[-1]


def _aggregate(cells: list[dict[int, Cell]], origin: int, width: int, key: str) -> dict[str, Any]:
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
    names = ("x", "n", "mean", "median", "std", "min", "max", "lo", "hi")
    cols: list[list[Any]] = [[] for _ in names]
    none5 = (None,) * 5
    for b in sorted(acc):
        vals, lo, hi = acc[b]
        row = (origin + b * width, len(vals), *(_stats(vals) if vals else none5), lo, hi)
        for col, v in zip(cols, row, strict=True):
            col.append(v)
    return {"key": key, **dict(zip(names, cols, strict=True))}


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
            s = _aggregate(mine, gr["origin"], gr["width"], key)
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
