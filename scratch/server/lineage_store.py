"""Runs' lineage on the server (issue 37; to move into the store package once issue 31 lands).

Two tables (migration 0009):

* ``run_lineage``: ``(run_id, parent_id, step, created_at)``: run ``run_id`` (a run key) was
  forked from ``parent_id`` at ``step``; its history is the parent's view up to ``step`` then
  its own points (read through by :func:`view_segments`).
* ``set_aside``: ``(run_id, rewind, step, shadow_id, created_at)``: rewind ``rewind`` of the
  run moved its points past ``step`` to ``shadow_id``, a key under which ``metric_keys``,
  ``extras`` and ``media_items`` rows keep them (no ``runs`` row: nothing lists it) until
  restored as a run of its own (a fork at ``step``).

Bound parameters only; every query names the run by its key.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from sqlalchemy import BigInteger, Column, Float, Index, Integer, MetaData, String, Table
from sqlalchemy import PrimaryKeyConstraint, select, update

metadata = MetaData()

run_lineage = Table(
    "run_lineage",
    metadata,
    Column("run_id", String(64), primary_key=True),  # the fork's run key
    Column("parent_project", String(128), nullable=False),
    Column("parent_given_id", String(64), nullable=False),  # resolved when read: a fork may
    Column("step", BigInteger, nullable=False),  # arrive before its parent
    Column("created_at", Float, nullable=False),
    Index("ix_run_lineage_parent", "parent_project", "parent_given_id"),
)

set_aside = Table(
    "set_aside",
    metadata,
    Column("run_id", String(64), nullable=False),
    Column("rewind", Integer, nullable=False),
    Column("step", BigInteger, nullable=False),
    Column("shadow_id", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    PrimaryKeyConstraint("run_id", "rewind"),
)

MAX_STEP = (1 << 63) - 1
MAX_DEPTH = 64


def parent_of(conn: Any, S: Any, run_id: str) -> tuple[str | None, int] | None:
    """(the parent's run key, or None while it is not on the server; the fork step), or None
    for a run that is not a fork."""
    lin, r = run_lineage.c, S.runs.c
    row = conn.execute(
        select(r.id, lin.step)
        .select_from(run_lineage.outerjoin(
            S.runs, (r.project == lin.parent_project) & (r.given_id == lin.parent_given_id)
        ))
        .where(lin.run_id == run_id)
    ).first()
    return None if row is None else (row[0], int(row[1]))


def view_segments(
    conn: Any, S: Any, run_id: str, lo: int = 0, hi: int = MAX_STEP
) -> list[tuple[str, int, int]]:
    """``[(run key, lo, hi), ...]``, oldest ancestor first: where the points of ``run_id``'s
    view in ``[lo, hi]`` are (one segment for a run that is not a fork)."""
    out: list[tuple[str, int, int]] = []
    cur, top = run_id, hi
    for _ in range(MAX_DEPTH):
        got = parent_of(conn, S, cur)
        if got is None or got[0] is None:
            out.append((cur, lo if got is None else max(lo, got[1] + 1), top))
            break
        parent, step = got
        if step < top:
            out.append((cur, max(lo, step + 1), top))
        top = min(top, step)
        cur = parent
        if top < lo:
            break
    return [s for s in reversed(out) if s[1] <= s[2]]


def _shadow_key(run_id: str, rewind: int) -> str:
    raw = f"{run_id}~{rewind}"
    if len(raw) <= 64:
        return raw
    return "~" + hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def move_after(conn: Any, dialect: Any, S: Any, run_id: str, step: int) -> str:
    """Set aside the points, extras and media items of ``run_id`` past ``step`` (a rewind):
    the chunk holding ``step`` is split, the later ones change key; returns the shadow key."""
    from wisp.server._chunks import chunk_row, decode, pieces

    sa = set_aside.c
    n = conn.execute(select(sa.rewind).where(sa.run_id == run_id).order_by(sa.rewind.desc())).first()
    rewind = 0 if n is None else int(n[0]) + 1
    shadow = _shadow_key(run_id, rewind)
    mk, ch = S.metric_keys.c, S.chunks.c
    keys = conn.execute(select(mk.id, mk.key).where(mk.run_id == run_id)).all()
    if keys:
        dialect.insert_ignore(
            conn, S.metric_keys, [{"run_id": shadow, "key": k} for _i, k in keys], ["run_id", "key"]
        )
        new_ids = dict(conn.execute(select(mk.key, mk.id).where(mk.run_id == shadow)).all())
    rows = []
    for kid, key in keys:
        skid = new_ids[key]
        conn.execute(update(S.chunks).where(ch.key_id == kid, ch.s0 > step).values(key_id=skid))
        for _k, s0, s1, _n, data in dialect.fetch_chunks(conn, [(kid, step, step)], "merge"):
            if not s0 <= step < s1:
                continue
            st, tm, vs = decode(bytes(data))
            keep = st <= step
            rows.append(chunk_row(kid, st[keep], tm[keep], vs[keep]))
            rows.extend(pieces(skid, st[~keep], tm[~keep], vs[~keep]))
    if rows:
        dialect.write_chunks(conn, rows, [])
    for table in (S.extras, S.media_items):
        c = table.c
        conn.execute(update(table).where(c.run_id == run_id, c.step > step).values(run_id=shadow))
    conn.execute(
        set_aside.insert(),
        [{"run_id": run_id, "rewind": rewind, "step": step, "shadow_id": shadow, "created_at": time.time()}],
    )
    return shadow


def fork_step_series(
    conn: Any, dialect: Any, S: Any, segs: list[tuple[str, int, int]], key: str,
    a: int, b: int, buckets: int,
) -> dict[str, Any] | None:
    """One key of a fork against x=step: the points of each segment of its view in ``[a, b]``
    (decoded: the parent's chunk aggregates do not stop at the fork step), bucketed with the
    rules of the Python path; None when no segment has the key."""
    import numpy as np

    from wisp.server._points_read import read_chunks
    from wisp.server._series import _NONNUMERIC, _py_downsample  # noqa: F401

    mk = S.metric_keys.c
    steps, values = [], []
    for run_key, lo, hi in segs:
        lo, hi = max(lo, a), min(hi, b)
        if lo > hi:
            continue
        kid = conn.execute(select(mk.id).where(mk.run_id == run_key, mk.key == key)).scalar()
        if kid is None:
            continue
        _k, st, _t, vs = read_chunks(dialect, conn, [int(kid)], lo, hi)
        steps.append(st)
        values.append(vs)
    if not steps:
        return None
    st, vs = np.concatenate(steps), np.concatenate(values)
    fin = np.isfinite(vs)
    nf = np.where(fin, 0, np.where(np.isnan(vs), 1, np.where(vs > 0, 2, 3)))
    pts = [
        (float(x), float(y) if f else None, int(c))
        for x, y, f, c in zip(st.tolist(), vs.tolist(), fin.tolist(), nf.tolist(), strict=True)
    ]
    return _py_downsample(pts, buckets)
