"""The per-run series of many runs at once (a report's line panel over a run set).

``run_series(store, runs, keys, hi=, buckets=)`` answers what ``series.buckets.series`` answers
per run and key against ``x = step`` (``{x, y, min, max}``: per bucket its first step, the
last value and the extremes of the finite values), but reads each key of every run in one
pass: the chunks' aggregates of all the runs in one query and the chunks across a bucket
edge decoded together, as the grouped series reads them (``series.grouped``, whose cells a
run's series is: its last value and min/max per bucket).  Runs that span the same steps share
one grid; runs of other lengths get theirs (one pass per distinct span).  A fork (its view
goes through its parent) and a run that logged ``None`` or text under a numeric key (its line
breaks there) are read by ``series`` itself, one by one.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from wisp.server.series.buckets import bucket_starts, series, step_range
from wisp.server.series.grouped import nan_to_none as _none_nan
from wisp.server.series.grouped import read_cells
from wisp.server.store import lineage
from wisp.server.store import schema as S

__all__ = ["run_series"]

_CHUNK = 900
Series = dict[str, list[Any]]


def _special(conn: Any, runs: list[str], a: int, b: int) -> set[str]:
    """The runs that are forks or hold non-numeric values of numeric keys in ``[a, b]``."""
    lin, e = lineage.run_lineage.c, S.extras.c
    out: set[str] = set()
    for i in range(0, len(runs), _CHUNK):
        part = runs[i : i + _CHUNK]
        out.update(conn.execute(select(lin.run_id).where(lin.run_id.in_(part))).scalars())
        q = select(e.run_id).where(e.run_id.in_(part), e.step >= a, e.step <= b).distinct()
        out.update(conn.execute(q).scalars())
    return out


def _spans(conn: Any, kids: list[int], a: int, b: int) -> dict[tuple[int, int], list[int]]:
    """Key ids by the step span their chunks cover in ``[a, b]`` (runs of one length share)."""
    c = S.chunks.c
    out: dict[tuple[int, int], list[int]] = {}
    for i in range(0, len(kids), _CHUNK):
        q = (
            select(c.key_id, func.min(c.s0), func.max(c.s1))
            .where(c.key_id.in_(kids[i : i + _CHUNK]), c.s1 >= a, c.s0 <= b)
            .group_by(c.key_id)
        )
        for kid, s0, s1 in conn.execute(q).all():
            out.setdefault((max(int(s0), a), min(int(s1), b)), []).append(int(kid))
    return out


def run_series(
    store: Any, runs: list[str], keys: list[str], *, hi: int | None = None, buckets: int = 1000
) -> dict[tuple[str, str], Series]:
    """``(run, key) -> {x, y, min, max}`` for every run and key that has points at steps
    ``<= hi`` (see the module docstring)."""
    import numpy as np

    a, b = step_range(None, hi, None)
    out: dict[tuple[str, str], Series] = {}
    if a > b or not runs or not keys:
        return out
    with store.engine.connect() as conn:
        special = _special(conn, runs, a, b)
        plain = [r for r in runs if r not in special]
        mk = S.metric_keys.c
        for key in keys:
            run_of: dict[int, str] = {}
            for i in range(0, len(plain), _CHUNK):
                q = select(mk.id, mk.run_id).where(
                    mk.key == key, mk.run_id.in_(plain[i : i + _CHUNK])
                )
                run_of.update(conn.execute(q).all())
            for kids in _spans(conn, sorted(run_of), a, b).values():
                got = read_cells(store.dialect, conn, kids, a, b, buckets)
                if got is None:
                    continue
                grid, c = got
                cut = np.flatnonzero(np.r_[True, c.kid[1:] != c.kid[:-1]])
                ends = np.r_[cut[1:], len(c.kid)]
                for s, e in zip(cut.tolist(), ends.tolist(), strict=True):
                    bk = c.bucket[s:e]
                    if grid["width"]:
                        xs = (grid["origin"] + bk * grid["width"]).tolist()
                    else:
                        xs = bucket_starts(grid["first"], grid["last"], buckets, bk.tolist())
                    out[(run_of[int(c.kid[s])], key)] = {
                        "x": xs,
                        "y": _none_nan(c.last[s:e]),
                        "min": _none_nan(c.lo[s:e]),
                        "max": _none_nan(c.hi[s:e]),
                    }
    for one in series(store, sorted(special), keys, hi=hi, buckets=buckets) if special else []:
        out[(one["run"], one["key"])] = {k: one[k] for k in ("x", "y", "min", "max")}
    return out
