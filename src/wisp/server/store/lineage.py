"""Runs' lineage on the server: forks read through their parents, rewinds set rows aside.

Two tables (Alembic ``0009_lineage``; the records are ``wisp._lineage``'s, docs/fork.md):

* ``run_lineage`` ``(run_id, parent_project, parent_given_id, step, created_at)``: run key
  ``run_id`` was forked from the run ``parent_given_id`` of ``parent_project`` at ``step``
  (from its LINEAGE record).  The parent is resolved when read, so a fork may arrive before
  its parent; its history is the parent's view up to ``step`` then its own
  (:func:`view_segments`).
* ``set_aside`` ``(run_id, rewind, step, shadow_id, created_at)``: rewind number ``rewind``
  of the run (a RESUME record with a ``rewind`` member) moved its points, extras and media
  items past ``step`` to the key ``shadow_id``; no ``runs`` row has that key, so nothing
  lists or reads them until they are asked for -- once restored (:func:`restore`), the
  row stays as ``-1 - rewind`` naming the restored run -- but a fork made before the rewind, at a
  step past the rewind's, keeps reading them there (its view as it was when it was made).
  ``created_at`` of both tables is the client's time of the fork (``forked_at``) and of the
  rewind (``resumed_at``) when the records carry one, so the two compare.

Bound parameters only; every statement names the run by its key.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    select,
    update,
)
from sqlalchemy.engine import Connection

from wisp._protocol import SYSTEM_KEY_PREFIX, RecordType
from wisp.server.http.problem import invalid
from wisp.server.rights.matrix import ACTOR, can_read_project
from wisp.server.store import schema as S

__all__ = [
    "MAX_DEPTH",
    "describe",
    "forget",
    "on_record",
    "project_forks",
    "record_fork",
    "restore",
    "run_lineage",
    "set_aside",
    "set_aside_after",
    "shadow_of",
    "view_segments",
    "view_summary",
]

run_lineage = Table(
    "run_lineage",
    S.metadata,
    Column("run_id", String(64), primary_key=True),
    Column("parent_project", String(128), nullable=False),
    Column("parent_given_id", String(64), nullable=False),
    Column("step", BigInteger, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_run_lineage_parent", "parent_project", "parent_given_id"),
)

set_aside = Table(
    "set_aside",
    S.metadata,
    Column("run_id", String(64), nullable=False),
    Column("rewind", Integer, nullable=False),
    Column("step", BigInteger, nullable=False),
    Column("shadow_id", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    PrimaryKeyConstraint("run_id", "rewind"),
)

MAX_STEP = (1 << 63) - 1
#: forks of forks deeper than this are read down to here only (a loop ends here)
MAX_DEPTH = 64


def on_record(
    conn: Connection, guard: Any, run_id: str, rec: Any, fld: str
) -> tuple[int, float | None] | None:
    """A RESUME or LINEAGE record of ``run_id``: (the step of a rewind, when it was made by
    the client's clock) -- the caller sets the later points aside -- or None; a fork is
    noted (:func:`record_fork`)."""
    try:
        obj = json.loads(rec.data["text"])
    except (KeyError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    if rec.kind == RecordType.LINEAGE:
        if obj.get("kind") == "fork":
            record_fork(conn, guard, run_id, obj, fld)
        return None
    back = obj.get("rewind")
    step = back.get("step") if isinstance(back, dict) else None
    return (step, _when(obj.get("resumed_at"))) if type(step) is int and step >= 0 else None


def _when(t: Any) -> float | None:
    """A record's client time (``forked_at``, ``resumed_at``), when it is one."""
    return float(t) if type(t) in (int, float) and t == t and abs(t) < 1e11 else None


def record_fork(conn: Connection, guard: Any, run_id: str, data: dict[str, Any], fld: str) -> None:
    """Note a LINEAGE record's fork (the run's first one counts).  The parent must be on
    this server and readable by the caller (422 otherwise: the uploader sets the record aside
    and ``wisp sync --retry-rejected`` sends it again once the parent is there), unless the
    caller reads every project (a site admin, the local caller of ``wisp ui``, the CLI)."""
    pid, project, step = data.get("parent_id"), data.get("parent_project"), data.get("step")
    if not (isinstance(pid, str) and isinstance(project, str) and type(step) is int):
        raise invalid(f"{fld}.data", "a fork names parent_id, parent_project and step")
    lin, r = run_lineage.c, S.runs.c
    if conn.execute(select(lin.run_id).where(lin.run_id == run_id)).first():
        return
    parent = conn.execute(select(r.id).where(r.project == project, r.given_id == pid)).first()
    actor = ACTOR.get()  # None: a trusted caller (the CLI)
    reads_all = actor is None or actor.is_admin or actor.via == "local"  # wisp ui: local
    info = None if reads_all else guard.info(conn, project)
    may_read = reads_all or (
        actor is not None and info is not None and can_read_project(actor, info)
    )
    # as ProjectStore.readable() decides; a caller who reads every project may name a parent
    # not uploaded yet (wisp ui imports runs in any order): it is resolved when read
    if not may_read or (parent is None and not reads_all):
        raise invalid(
            f"{fld}.data.parent_id",
            f"no run {pid!r} in project {project!r} that this caller may read: "
            "upload the parent first (wisp sync does)",
        )
    if parent is not None and parent[0] == run_id:
        raise invalid(f"{fld}.data.parent_id", "a run cannot be forked from itself")
    conn.execute(
        run_lineage.insert(),
        [{"run_id": run_id, "parent_project": project[:128], "parent_given_id": pid[:64],
          "step": step, "created_at": _when(data.get("forked_at")) or time.time()}],
    )  # fmt: skip


def parent_of(conn: Connection, run_id: str) -> tuple[str | None, int] | None:
    """(the parent's run key, None while it is not on this server; the fork step), or None
    for a run that is not a fork."""
    got = _fork_of(conn, run_id)
    return None if got is None else (got[0], got[1])


def _fork_of(conn: Connection, run_id: str) -> tuple[str | None, int, float] | None:
    """:func:`parent_of` and when the fork was made (its LINEAGE record's ``forked_at``)."""
    lin, r = run_lineage.c, S.runs.c
    on = (r.project == lin.parent_project) & (r.given_id == lin.parent_given_id)
    row = conn.execute(
        select(r.id, lin.step, lin.created_at)
        .select_from(run_lineage.outerjoin(S.runs, on))
        .where(lin.run_id == run_id)
    ).first()
    return None if row is None else (row[0], int(row[1]), float(row[2]))


def _as_forked(
    conn: Connection, parent: str, lo: int, hi: int, forked_at: float
) -> list[tuple[str, int, int]]:
    """The parent's part ``[lo, hi]`` of a fork made at ``forked_at``, as it was then:
    a rewind of the parent made later, to a step below ``hi``, moved the points past its
    step to its shadow key, where the fork keeps reading them (newest segment first)."""
    sa = set_aside.c
    out: list[tuple[str, int, int]] = []
    q = select(sa.rewind, sa.step, sa.shadow_id).where(
        sa.run_id == parent, sa.created_at > forked_at, sa.step < hi
    )
    for _n, step, shadow in sorted(conn.execute(q), key=lambda r: _number(int(r[0]))):
        if int(step) < hi:  # points in (step, hi] were the fork's: they went to this shadow
            out.append((str(shadow), max(lo, int(step) + 1), hi))
            hi = int(step)
    out.append((parent, lo, hi))
    return out


def view_segments(
    conn: Connection, run_id: str, lo: int = 0, hi: int = MAX_STEP
) -> list[tuple[str, int, int]]:
    """``[(run key, lo, hi), ...]``, oldest ancestor first: where the points of ``run_id``'s
    view in ``[lo, hi]`` are (``[(run_id, lo, hi)]`` for a run that is not a fork).  A
    key may be a *shadow* key (:func:`set_aside_after`): a parent rewound below the fork
    step after the fork was made keeps showing the fork its history as it was then."""
    out: list[tuple[str, int, int]] = []
    cur, top, since = run_id, hi, None
    for _ in range(MAX_DEPTH):
        got = _fork_of(conn, cur)
        mine = lo if got is None or got[0] is None else max(lo, got[1] + 1)
        if mine <= top:  # this run's part of the view (a parent's: as it was at the fork)
            out.extend(
                [(cur, mine, top)] if since is None else _as_forked(conn, cur, mine, top, since)
            )
        if got is None or got[0] is None:
            break
        parent, step, since = got
        top = min(top, step)
        cur = str(parent)
        if top < lo:
            break
    return [s for s in reversed(out) if s[1] <= s[2]]


def _shadow_key(run_id: str, rewind: int) -> str:
    raw = f"{run_id}~{rewind}"  # "~" is in no run key: never a run's
    if len(raw) <= 64:
        return raw
    return "~" + hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def _number(rewind: int) -> int:
    """A rewind's number: a restored one's row keeps ``-1 - number`` (:func:`restore`)."""
    return rewind if rewind >= 0 else -1 - rewind


def set_aside_after(conn: Connection, dialect: Any, run_id: str, step: int, now: float) -> str:
    """Set aside the points, extras and media items of ``run_id`` past ``step`` (a rewind):
    the chunk holding ``step`` is split, later chunks change key; returns the shadow key.
    System samples (keys ``system/...``, at step = time in ms) stay."""
    from wisp.server.series.chunks import chunk_row, decode, pieces

    sa = set_aside.c
    done = [_number(int(n)) for (n,) in conn.execute(select(sa.rewind).where(sa.run_id == run_id))]
    rewind = max(done, default=-1) + 1  # restored ones count: their runs keep the numbers
    shadow = _shadow_key(run_id, rewind)
    mk, ch = S.metric_keys.c, S.chunks.c
    keys = [  # system samples are at step = time in ms, not training steps: they stay
        (kid, key)
        for kid, key in conn.execute(select(mk.id, mk.key).where(mk.run_id == run_id))
        if not key.startswith(SYSTEM_KEY_PREFIX)
    ]
    new_ids: dict[str, int] = {}
    if keys:
        rows = [{"run_id": shadow, "key": k} for _i, k in keys]
        dialect.insert_ignore(conn, S.metric_keys, rows, ["run_id", "key"])
        new_ids = dict(conn.execute(select(mk.key, mk.id).where(mk.run_id == shadow)).all())
    split = []
    for kid, key in keys:
        skid = new_ids[key]
        conn.execute(update(S.chunks).where(ch.key_id == kid, ch.s0 > step).values(key_id=skid))
        for _k, s0, s1, _n, data in dialect.fetch_chunks(conn, [(kid, step, step)], "merge"):
            if s0 <= step < s1:
                st, tm, vs = decode(bytes(data))
                keep = st <= step
                split.append(chunk_row(kid, st[keep], tm[keep], vs[keep]))
                split.extend(pieces(skid, st[~keep], tm[~keep], vs[~keep]))
    if split:
        dialect.write_chunks(conn, split, [])
    for table in (S.extras, S.media_items):
        c = table.c
        conn.execute(update(table).where(c.run_id == run_id, c.step > step).values(run_id=shadow))
    conn.execute(
        set_aside.insert(),
        [{"run_id": run_id, "rewind": rewind, "step": step, "shadow_id": shadow,
          "created_at": now}],
    )  # fmt: skip
    return shadow


def describe(conn: Connection, run_id: str, readable: Any) -> dict[str, Any] | None:
    """``{"parent", "forks", "set_aside"}`` of run key ``run_id`` (None: no such run); forks
    only in ``readable`` projects (None: every project)."""
    from sqlalchemy import func

    r, lin, sa, mk, ch = S.runs.c, run_lineage.c, set_aside.c, S.metric_keys.c, S.chunks.c
    me = conn.execute(select(r.project, r.given_id).where(r.id == run_id)).first()
    if me is None:
        return None
    parent = None
    row = conn.execute(
        select(lin.parent_given_id, lin.parent_project, lin.step).where(lin.run_id == run_id)
    ).first()
    if row is not None:
        got = parent_of(conn, run_id)
        key = None if got is None else got[0]
        parent = {"id": row[0], "project": row[1], "key": key, "step": int(row[2])}
    q = (
        select(r.given_id, r.id, r.project, r.name, lin.step)
        .select_from(run_lineage.join(S.runs, r.id == lin.run_id))
        .where(lin.parent_project == me[0], lin.parent_given_id == me[1])
        .order_by(r.created_at)
    )
    forks = [
        {"id": g, "key": k, "project": p, "name": n, "step": int(s)}
        for g, k, p, n, s in conn.execute(q)
        if readable is None or p in readable
    ]
    aside = []
    for rewind, step, shadow in conn.execute(
        select(sa.rewind, sa.step, sa.shadow_id)
        .where(sa.run_id == run_id, sa.rewind >= 0)
        .order_by(sa.rewind)
    ):
        n, lo, hi = conn.execute(
            select(func.sum(ch.n), func.min(ch.s0), func.max(ch.s1))
            .select_from(S.chunks.join(S.metric_keys, mk.id == ch.key_id))
            .where(mk.run_id == shadow)
        ).one()
        aside.append(
            {"rewind": int(rewind), "step": int(step), "points": int(n or 0),
             "min_step": None if lo is None else int(lo),
             "max_step": None if hi is None else int(hi)}
        )  # fmt: skip
    return {"parent": parent, "forks": forks, "set_aside": aside}


def shadow_of(conn: Connection, run_id: str, rewind: int) -> str | None:
    """The key holding what rewind ``rewind`` of run key ``run_id`` set aside (None: no such
    rewind, or restored already); read it as a run key (``series.history.export_history``)."""
    sa = set_aside.c
    if rewind < 0:
        return None
    q = select(sa.shadow_id).where(sa.run_id == run_id, sa.rewind == rewind)
    got = conn.execute(q).scalar()
    return None if got is None else str(got)


def project_forks(conn: Connection, project: str, readable: Any = None) -> list[dict[str, Any]]:
    """``[{"key", "parent_key", "step"}]``: the runs of ``project`` forked from a run on this
    server in a ``readable`` project (None: any), oldest fork first (the runs table groups
    forks under their parents)."""
    lin = run_lineage.c
    fork, par = S.runs.alias("fork"), S.runs.alias("par")
    q = (
        select(fork.c.id, par.c.id, lin.step, par.c.project)
        .select_from(
            run_lineage.join(fork, fork.c.id == lin.run_id).join(
                par,
                (par.c.project == lin.parent_project) & (par.c.given_id == lin.parent_given_id),
            )
        )
        .where(fork.c.project == project)
        .order_by(fork.c.created_at, fork.c.id)
    )
    return [
        {"key": k, "parent_key": p, "step": int(s)}
        for k, p, s, pp in conn.execute(q)
        if readable is None or pp in readable
    ]


def forget(conn: Connection, run_id: str) -> None:
    """Delete run ``run_id``'s lineage: its fork record and what its rewinds set aside (its
    forks keep theirs, and read their own points only once it is gone)."""
    from sqlalchemy import delete

    sa = set_aside.c
    q = select(sa.shadow_id).where(sa.run_id == run_id, sa.rewind >= 0)  # not restored runs
    for (shadow,) in conn.execute(q).all():
        kids = select(S.metric_keys.c.id).where(S.metric_keys.c.run_id == shadow)
        conn.execute(delete(S.chunks).where(S.chunks.c.key_id.in_(kids)))
        for table in (S.metric_keys, S.extras, S.media_items):
            conn.execute(delete(table).where(table.c.run_id == shadow))
    conn.execute(delete(set_aside).where(sa.run_id == run_id))
    conn.execute(delete(run_lineage).where(run_lineage.c.run_id == run_id))


def _metrics(conn: Connection, runs: list[str]) -> list[dict[str, Any]]:
    """The metric definitions of ``runs`` (oldest first), as a reader's list: a later one
    wins; within a run, exact names after globs."""
    rm = S.run_metrics.c
    out: list[dict[str, Any]] = []
    for run in runs:
        rows = sorted(
            conn.execute(select(rm.name, rm.spec).where(rm.run_id == run)),
            key=lambda r: (not any(c in r[0] for c in "*?["), r[0]),
        )
        out.extend(dict(spec) for _n, spec in rows if isinstance(spec, dict))
    return out


def _spec(metrics: list[dict[str, Any]], key: str) -> dict[str, Any]:
    from fnmatch import fnmatchcase

    for m in reversed(metrics):
        name = m.get("name")
        if isinstance(name, str) and fnmatchcase(key, name):
            return dict(m)
    return {"summary": "last"}


def _over(conn: Connection, dialect: Any, parts: list[tuple[int, int, int]]) -> Any:
    """The values of key ids ``parts`` ``(key id, lo, hi)``, in step order (numpy)."""
    import numpy as np

    from wisp.server.series.read import read_points

    got = [read_points(dialect, conn, [kid], a, b)[2] for kid, a, b in parts]
    return np.concatenate(got) if got else np.empty(0)


def _last(conn: Connection, dialect: Any, parts: list[tuple[int, int, int]]) -> Any:
    """The last value of key ids ``parts`` (newest last), or None (one chunk per part)."""
    import numpy as np

    from wisp.server.series.read import last_at

    for kid, a, b in reversed(parts):
        got = last_at(dialect, conn, kid, b)
        if got is not None and got[0] >= a:
            return np.array([got[2]])
    return None


def _fold(
    conn: Connection, dialect: Any, key: str, spec: dict[str, Any], parts: list[Any]
) -> dict[str, Any]:
    """The writer's summary of ``key`` over ``parts`` (plain: the last value, one chunk
    read per part; ``define_metric`` kinds: every point of the parts decoded)."""
    from wisp._metric import summary_over

    how = spec.get("summary", "last")
    if how == "none":
        return {}
    vals = _last(conn, dialect, parts) if how == "last" else _over(conn, dialect, parts)
    if vals is None or not len(vals):
        return {}
    out = summary_over(key, spec, vals) if how != "last" else {key: float(vals[-1])}
    return {k: v if type(v) is not float or math.isfinite(v) else None for k, v in out.items()}


def _others(conn: Connection, segs: list[tuple[str, int, int]]) -> dict[str, Any]:
    """The last value of each key logged as text, a boolean, a list or a media item in
    ``segs`` (later parts win): every such row of the parts is read."""
    from sqlalchemy import func

    e, m = S.extras.c, S.media_items.c
    out: dict[str, Any] = {}
    for run, lo, hi in segs:
        last: dict[str, tuple[int, Any]] = {}
        q = select(e.step, e.data).where(e.run_id == run, e.step >= lo, e.step <= hi)
        for step, data in conn.execute(q.order_by(e.step)):
            got = json.loads(data)
            if isinstance(got, dict):
                last.update((k, (int(step), v)) for k, v in got.items())
        span = (m.run_id == run) & (m.step >= lo) & (m.step <= hi)
        for key, step in conn.execute(select(m.key, func.max(m.step)).where(span).group_by(m.key)):
            if key in last and last[key][0] > int(step):
                continue
            q = select(m.data).where(m.run_id == run, m.key == key, m.step == step)
            last[key] = (int(step), conn.execute(q.order_by(m.id.desc()).limit(1)).scalar())
        out.update((k, v) for k, (_s, v) in last.items())
    return out


def view_summary(
    conn: Connection, dialect: Any, run_id: str, summary: dict[str, Any]
) -> dict[str, Any]:
    """A fork's SUMMARY record (the writer's, over its own rows) made the summary of its
    view, as a plain run holding the same points would have: each numeric key recomputed
    over the view with its parents' and its own metric definitions (a reader's rules,
    ``wisp._lineage_read.summarize``); a key logged as text, a boolean or media keeps its
    last value in the view; the keys the user set (those the fork's own points do not
    give) stay as recorded.  Any other run's is as it is."""
    segs = view_segments(conn, run_id)
    if len(segs) < 2:
        return summary
    chain, cur = [run_id], run_id
    while len(chain) < MAX_DEPTH and (got := parent_of(conn, cur)) and got[0] is not None:
        cur = str(got[0])
        chain.append(cur)
    view_m, own_m = _metrics(conn, chain[::-1]), _metrics(conn, [run_id])
    mk = S.metric_keys.c
    parts: dict[str, list[tuple[int, int, int]]] = {}
    for seg_run, lo, hi in segs:
        for kid, key in conn.execute(select(mk.id, mk.key).where(mk.run_id == seg_run)):
            if not key.startswith(SYSTEM_KEY_PREFIX):
                parts.setdefault(key, []).append((int(kid), lo, hi))
    view: dict[str, Any] = {}
    mine: dict[str, Any] = {}
    for key, where in parts.items():
        view.update(_fold(conn, dialect, key, _spec(view_m, key), where))
        own = [p for p in where if p[1] > segs[-2][2]]  # the fork's own part
        if own:
            mine.update(_fold(conn, dialect, key, _spec(own_m, key), own))
    user = {k: v for k, v in summary.items() if k not in mine or mine[k] != v}
    return {**_others(conn, segs[:-1]), **view, **user}


def restore(conn: Connection, runs: Any, run_id: str, rewind: int, now: float) -> str | None:
    """Make what rewind ``rewind`` of run key ``run_id`` set aside a run of its own: a fork of
    the run at the rewind's step, id ``<id>-rewind<i>`` in the same project, holding those
    points (finished).  Returns its key (the same one when asked again); None when the run
    has no such rewind."""
    sa, r = set_aside.c, S.runs.c
    row = conn.execute(
        select(sa.step, sa.shadow_id).where(sa.run_id == run_id, sa.rewind == rewind)
    ).first()
    if rewind < 0:
        row = None
    me = conn.execute(
        select(r.project, r.given_id, r.name, r.config, r.config_json).where(r.id == run_id)
    ).first()
    if me is None:
        return None
    new_id = f"{me[1][:48]}-rewind{rewind}"
    if row is None:  # restored already (or never set aside): the run made then, if any
        found = runs.resolve(conn, me[0], new_id)
        return None if found is None else str(found)
    step, shadow = int(row[0]), str(row[1])
    key = str(runs.create(conn, new_id, {"project": me[0], "name": f"{me[2]}-rewind{rewind}"}))
    for table in (S.metric_keys, S.extras, S.media_items):
        c = table.c
        conn.execute(update(table).where(c.run_id == shadow).values(run_id=key))
    conn.execute(
        update(S.runs)
        .where(r.id == key)
        .values(config=me[3], config_json=me[4], state="finished", finished_at=now)
    )
    conn.execute(
        run_lineage.insert(),
        [{"run_id": key, "parent_project": me[0], "parent_given_id": me[1], "step": step,
          "created_at": now}],
    )  # fmt: skip
    # the row stays, marked restored, naming the run: forks made before the rewind read it
    conn.execute(
        update(set_aside)
        .where(sa.run_id == run_id, sa.rewind == rewind)
        .values(rewind=-1 - rewind, shadow_id=key)
    )
    return key
