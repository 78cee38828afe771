"""Runs grouped by config/metadata keys, and their metrics aggregated per group.

A project's runs (a filter, or a list of ids) are put in groups by the values of one or
more fields: a run column (``group``, ``job_type``, ``state``, ``name``, ``tags``) or a
path into ``config``, ``summary`` or ``metadata`` (``config.optimizer.lr``; missing values
make their own group).  Each metric is then read on one step grid shared by every run and
group, and each grid bucket gets, per run, the last value in the bucket and the bucket's
min and max; per group and bucket the answer holds the mean, median, population standard
deviation, min and max of the runs' last values (a run whose last value in the bucket is
not finite has none), the number of runs with a value, and the min/max envelope of every
finite point in the bucket.

The grid is the per-run series' (:func:`series.buckets.step_grid`) over the first and last step
any selected run holds in range, so grouped and per-run charts of the same range share
their bucket edges: a bucket per step when the span is at most ``buckets`` steps,
proportional buckets up to ``64 * buckets`` steps (``width`` 0 in the answer), wider spans
buckets of a whole number of 64-step blocks.  The points are read as the per-run series
reads them: every run's chunk aggregates in one query; a stored chunk inside one bucket
counts by its aggregates (``n``, ``vmin``/``vmax``, ``last_v``), and only the chunks at the
range ends or across a bucket edge are decoded.  When those would be more than
``MAX_POINTS`` points, the grid is coarsened to whole 64-step blocks at least as wide as
a typical chunk (fewer buckets than asked, and the same exact statistics).  Only ``x = step``.
A fork's series is its view (``store.lineage``): its parents' points up to the fork step
then its own, read as a key's are (the chunk holding a fork step decoded), one run of its
group as any other.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

from sqlalchemy import and_, select

from wisp.server.http.problem import Problem, invalid
from wisp.server.query.filter import field_path
from wisp.server.query.runs import parse_filter
from wisp.server.series.buckets import ALIGN, bucket_index, bucket_starts, step_grid
from wisp.server.series.read import MAX, read_spans
from wisp.server.store import lineage
from wisp.server.store import schema as S

__all__ = ["MAX_RUNS", "group_fields", "group_runs", "grouped_series", "nan_to_none", "read_cells"]

MAX_RUNS = 1000
MAX_POINTS = 1_000_000  # decoded per key at most (~9 MB of chunk data); above, a coarser grid
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


# -- cells: per key and bucket, a run's last value and the bucket's min and max -------------


def _key_ids(conn: Any, runs: list[str], key: str) -> dict[int, str]:
    mk = S.metric_keys.c
    out: dict[int, str] = {}
    for i in range(0, len(runs), _CHUNK):
        q = select(mk.id, mk.run_id).where(mk.key == key, mk.run_id.in_(runs[i : i + _CHUNK]))
        out.update(conn.execute(q).all())
    return out


class Cells(NamedTuple):
    """One entry per (key id, bucket) with a point, sorted by both: the run's last step and
    value in the bucket (NaN when not finite) and the min/max of its finite points (NaN: none)."""

    kid: Any
    bucket: Any
    step: Any
    last: Any
    lo: Any
    hi: Any


def _spans(kid: Any, s0: Any, sel: Any) -> list[tuple[int, int, int]]:
    """``(key id, first s0, last s0)`` of each run of consecutive selected chunks of a key
    (``kid``/``s0``: the chunk rows as fetched, by key and s0)."""
    import numpy as np

    idx = np.flatnonzero(sel)
    if not len(idx):
        return []
    brk = np.flatnonzero((np.diff(idx) != 1) | (kid[idx[1:]] != kid[idx[:-1]])) + 1
    st = np.r_[0, brk]
    en = np.r_[brk, len(idx)] - 1
    return list(zip(kid[idx[st]].tolist(), s0[idx[st]].tolist(), s0[idx[en]].tolist(), strict=True))


def _fold_points(kid: Any, st: Any, vals: Any, bucket: Any) -> Cells:
    """Points (by key and step) folded into cells."""
    import numpy as np

    b = bucket(st)
    new = np.r_[True, (kid[1:] != kid[:-1]) | (b[1:] != b[:-1])]
    first = np.flatnonzero(new)
    end = np.r_[first[1:], len(st)] - 1
    v = np.where(np.isfinite(vals), vals, np.nan)
    return Cells(
        kid[first],
        b[first],
        st[end],
        v[end],
        np.fmin.reduceat(v, first),
        np.fmax.reduceat(v, first),
    )


def _virtual_points(
    dialect: Any, conn: Any, rows: list[tuple[int, int, int, int, int]]
) -> tuple[Any, Any, Any]:
    """(id, step, value) of chunk rows ``(id, key id, s0, lo, hi)``: each chunk ``(key id,
    s0)`` decoded once, its points in ``[lo, hi]`` (within the chunk) given the row's id."""
    import numpy as np

    if not rows:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0, np.float64)
    spans = sorted({(k, c, c) for _v, k, c, _lo, _hi in rows})
    kid, st, vals = read_spans(dialect, conn, spans)
    out_id, out_st, out_v = [], [], []
    for vid, k, _c, lo, hi in rows:
        a, b = np.searchsorted(kid, k, "left"), np.searchsorted(kid, k, "right")
        i, j = a + np.searchsorted(st[a:b], lo, "left"), a + np.searchsorted(st[a:b], hi, "right")
        out_id.append(np.full(j - i, vid, np.int64))
        out_st.append(st[i:j])
        out_v.append(vals[i:j])
    return np.concatenate(out_id), np.concatenate(out_st), np.concatenate(out_v)


def read_cells(
    dialect: Any,
    conn: Any,
    kids: list[int],
    lo: float | None,
    hi: float | None,
    buckets: int,
    views: list[tuple[int, int, int, int]] | None = None,
) -> tuple[dict[str, int], Cells] | None:
    """The grid of ``kids`` in ``[lo, hi]`` and their cells, or None when there is no point.

    Read as the per-run series reads a key (:func:`series.buckets._step_series`): the chunks'
    aggregates in one query; a chunk inside one bucket by them, the ones at the range ends
    or across a bucket edge decoded (runs of consecutive ones in one span each).  ``views``
    are the parts of forks' views ``(id, key id, first step, last step)``, read the same way
    under their id (below 0: not a key id; a fork's parts share one)."""
    import numpy as np

    a = 0 if lo is None else max(0, math.ceil(lo))
    b = MAX if hi is None else min(MAX, math.floor(hi))
    if a > b or not (kids or views):
        return None
    got = dialect.fetch_chunks(conn, [(k, a, b) for k in kids], "agg") if kids else []
    rows = [(*r, r[0], a, b) for r in got if r[2] >= a]
    for vid, k, v_a, v_b in views or ():
        va, vb = max(a, v_a), min(b, v_b)
        if va <= vb:
            got = dialect.fetch_chunks(conn, [(k, va, vb)], "agg")
            rows += [(vid, *r[1:], k, va, vb) for r in got if r[2] >= va]
    if not rows:
        return None
    kid, s0, s1, n = (np.array([r[i] for r in rows], np.int64) for i in range(4))
    # None (no finite value) becomes NaN
    vmin, vmax, last_v = (np.array([r[i] for r in rows], np.float64) for i in (4, 5, 7))
    real, ra, rb = (np.array([r[i] for r in rows], np.int64) for i in (-3, -2, -1))
    inner = (s0 >= ra) & (s1 <= rb)
    plain = kid >= 0

    def decode(sel: Any) -> tuple[Any, Any, Any]:
        """The points of the chunk rows ``sel`` within their rows' ranges."""
        p_kid, p_st, p_v = read_spans(dialect, conn, _spans(kid, s0, sel & plain))
        idx = np.flatnonzero(sel & ~plain).tolist()
        v_rows = [
            (int(kid[i]), int(real[i]), int(s0[i]), int(max(s0[i], ra[i])), int(min(s1[i], rb[i])))
            for i in idx
        ]
        v_kid, v_st, v_v = _virtual_points(dialect, conn, v_rows)
        if not len(v_st):
            return p_kid, p_st, p_v
        return np.r_[p_kid, v_kid], np.r_[p_st, v_st], np.r_[p_v, v_v]

    e_kid, e_st, e_v = decode(~inner)
    keep = (e_st >= a) & (e_st <= b)
    e_kid, e_st, e_v = e_kid[keep], e_st[keep], e_v[keep]
    ends = [int(e_st.min()), int(e_st.max())] if len(e_st) else []
    if not inner.any() and not ends:
        return None
    s_lo = min([int(s0[inner].min())] if inner.any() else [], default=MAX)
    s_lo = min([s_lo, *ends])
    s_hi = max([int(s1[inner].max())] if inner.any() else [], default=0)
    s_hi = max([s_hi, *ends])
    origin, width = step_grid(s_lo, s_hi, buckets)
    bucket = bucket_index(s_lo, s_hi, buckets)
    whole = inner & (bucket(s0) == bucket(s1))
    if int(n[inner & ~whole].sum()) + len(e_st) > MAX_POINTS:
        # too many points to decode on this grid: whole-chunk-wide buckets (fewer than asked)
        origin, width = _coarse(s_lo, s_hi, s0[inner], s1[inner], n[inner], width, buckets)
        bucket = lambda st: (st - origin) // width  # noqa: E731
        whole = inner & (bucket(s0) == bucket(s1))
    grid = {"origin": origin, "width": width, "first": s_lo, "last": s_hi}
    split = inner & ~whole
    p_kid, p_st, p_v = decode(split)
    if len(e_st) or not plain.all():
        p_kid, p_st, p_v = (np.concatenate(x) for x in ((p_kid, e_kid), (p_st, e_st), (p_v, e_v)))
        order = np.lexsort((p_st, p_kid))
        p_kid, p_st, p_v = p_kid[order], p_st[order], p_v[order]
    parts = [_fold_points(p_kid, p_st, p_v, bucket)] if len(p_st) else []
    if whole.any():
        w = whole
        parts.append(Cells(kid[w], bucket(s0[w]), s1[w], last_v[w], vmin[w], vmax[w]))
    if not whole.any():  # the points folded already: one cell per (key, bucket)
        return grid, parts[0]
    c = Cells(*(np.concatenate(x) for x in zip(*parts, strict=True)))
    order = np.lexsort((c.step, c.bucket, c.kid))
    c = Cells(*(x[order] for x in c))
    new = np.r_[True, (c.kid[1:] != c.kid[:-1]) | (c.bucket[1:] != c.bucket[:-1])]
    first = np.flatnonzero(new)
    end = np.r_[first[1:], len(c.kid)] - 1
    return grid, Cells(
        c.kid[first],
        c.bucket[first],
        c.step[end],
        c.last[end],
        np.fmin.reduceat(c.lo, first),
        np.fmax.reduceat(c.hi, first),
    )


def _coarse(
    s_lo: int, s_hi: int, s0: Any, s1: Any, n: Any, width: int, buckets: int
) -> tuple[int, int]:
    """A grid of whole 64-step blocks at least as wide as the typical chunk, doubled until
    the chunks it cuts hold at most ``MAX_POINTS`` points (or one bucket is left)."""
    import numpy as np

    span = int(np.median(s1 - s0)) + 1 if len(s0) else 1
    w = max(width, span, ALIGN)
    w = -(-w // ALIGN) * ALIGN
    origin = (s_lo // ALIGN) * ALIGN
    while (s_hi - origin) // w > 0:
        cut = (s0 - origin) // w != (s1 - origin) // w
        if int(n[cut].sum()) <= MAX_POINTS:
            break
        w *= 2
    return origin, w


def nan_to_none(a: Any) -> list[Any]:
    """A float array as a list, None where it is NaN."""
    import numpy as np

    nan = np.isnan(a)
    if not nan.any():
        return list(a.tolist())
    o = a.astype(object)
    o[nan] = None
    return list(o.tolist())


STATS = ("mean", "median", "std", "min", "max", "lo", "hi")


def _aggregate(
    c: Cells, grid: dict[str, Any], buckets: int, key: str, stats: tuple[str, ...]
) -> dict[str, Any]:
    """One group's series from its runs' cells (any order)."""
    import numpy as np

    out: dict[str, Any] = {"key": key}
    if not len(c.bucket):
        return {**out, "x": [], "n": [], **{s: [] for s in stats}}
    order = np.lexsort((c.last, c.bucket))  # in a bucket by value, NaN (no value) last
    bk, v = c.bucket[order], c.last[order]
    first = np.flatnonzero(np.r_[True, bk[1:] != bk[:-1]])
    fin = ~np.isnan(v)
    cnt = np.add.reduceat(fin.astype(np.int64), first)
    if grid["width"]:
        out["x"] = (grid["origin"] + bk[first] * grid["width"]).tolist()
    else:
        out["x"] = bucket_starts(grid["first"], grid["last"], buckets, bk[first].tolist())
    out["n"] = cnt.tolist()
    none = cnt == 0
    safe = np.maximum(cnt, 1)
    v0 = np.where(fin, v, 0.0)
    mean = np.where(none, np.nan, np.add.reduceat(v0, first) / safe)
    if "mean" in stats:
        out["mean"] = nan_to_none(mean)
    if "median" in stats:  # the finite values of a bucket come first, sorted
        mid, mid2 = first + (safe - 1) // 2, first + safe // 2
        out["median"] = nan_to_none(np.where(mid == mid2, v[mid], (v[mid] + v[mid2]) / 2))
    if "std" in stats:  # population standard deviation, two passes
        dev = np.where(fin, v - np.repeat(mean, np.diff(np.r_[first, len(v)])), 0.0)
        std = np.sqrt(np.add.reduceat(dev * dev, first) / safe)
        out["std"] = nan_to_none(np.where(none, np.nan, std))
    if "min" in stats:
        out["min"] = nan_to_none(np.fmin.reduceat(v, first))
    if "max" in stats:
        out["max"] = nan_to_none(np.fmax.reduceat(v, first))
    if "lo" in stats:
        out["lo"] = nan_to_none(np.fmin.reduceat(c.lo[order], first))
    if "hi" in stats:
        out["hi"] = nan_to_none(np.fmax.reduceat(c.hi[order], first))
    return out


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
    import numpy as np

    groups = group_runs(store, project, group_by, filter_expr, runs)
    all_runs = [rid for g in groups for rid in g["runs"]]
    group_of = {rid: gi for gi, g in enumerate(groups) for rid in g["runs"]}
    grids: dict[str, dict[str, Any]] = {}
    # per key: the runs of each group having the key, and each group's cells
    per_key: dict[str, tuple[list[int], list[Cells]]] = {}
    with store.engine.connect() as conn:
        forks = _fork_views(conn, all_runs)
        for key in keys:
            ids = _key_ids(conn, all_runs, key)
            views = []
            for i, (rid, segs) in enumerate(forks.items()):  # a fork: its view's parts
                ids = {k: r for k, r in ids.items() if r != rid}
                for seg, s_a, s_b in segs:
                    got_k = _key_ids(conn, [seg], key)
                    if got_k:
                        views.append((-1 - i, next(iter(got_k)), s_a, s_b))
                        ids[-1 - i] = rid
            kids = sorted(k for k in ids if k >= 0)
            got = read_cells(store.dialect, conn, kids, lo, hi, buckets, views)
            if got is None:
                continue
            grids[key], c = got
            have = [0] * len(groups)
            for rid in ids.values():
                have[group_of[rid]] += 1
            gi = np.array([group_of[ids[k]] for k in c.kid.tolist()], np.int64)
            order = np.argsort(gi, kind="stable")
            cuts = np.searchsorted(gi[order], np.arange(len(groups) + 1))
            c = Cells(*(x[order] for x in c))
            per_key[key] = (
                have,
                [Cells(*(x[cuts[g] : cuts[g + 1]] for x in c)) for g in range(len(groups))],
            )
    out_groups = []
    for g_i, g in enumerate(groups):
        series = []
        for key in keys:
            if key not in per_key or not per_key[key][0][g_i]:
                continue
            have, cells = per_key[key]
            s = _aggregate(cells[g_i], grids[key], buckets, key, stats)
            s["runs"] = have[g_i]
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
        "grids": [{"key": k, **grids[k]} for k in keys if k in grids],
        "groups": out_groups,
    }


def _fork_views(conn: Any, runs: list[str]) -> dict[str, list[tuple[str, int, int]]]:
    """run -> its view's segments (``store.lineage.view_segments``), for the forks of ``runs``
    whose parent is on this server (one query for the runs that are not forks)."""
    lin = lineage.run_lineage.c
    out: dict[str, list[tuple[str, int, int]]] = {}
    for i in range(0, len(runs), _CHUNK):
        q = select(lin.run_id).where(lin.run_id.in_(runs[i : i + _CHUNK]))
        for (rid,) in conn.execute(q):
            segs = lineage.view_segments(conn, rid)
            if len(segs) > 1:
                out[rid] = segs
    return out


def _label(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, float):
        return repr(v)
    return str(v)
