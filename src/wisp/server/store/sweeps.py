"""Sweeps in the database: two tables and their queries (:class:`SweepTables`).

Tables (Alembic revisions ``0002``, ``0017``):

- ``sweeps``        one row per (project, id): name, config (the sweep file as JSON), state,
                    seed, created_at.  A sweep id is unique in its project, not on the server:
                    two users' sweeps ``p1/abc`` and ``p2/abc`` are two sweeps.
- ``sweep_trials``  one row per (project, sweep_id, number): run_id, internal, system_attrs,
                    params, intermediate (JSON), state, value, agent_id, agent_pid, host,
                    created_at, heartbeat_at, finished_at.

The trial number is part of the primary key, so a second agent claiming the same number is
refused (``add_trial`` answers False).  The endpoints are :mod:`wisp.server.views.sweeps`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    func,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from wisp.server.store import schema as S

if TYPE_CHECKING:
    from wisp.server.store.facade import Store

__all__ = ["JSON_COLS", "SweepTables", "sweep_trials", "sweeps"]


sweeps = Table(
    "sweeps",
    S.metadata,
    Column("project", String(128), nullable=False),
    Column("id", String(64), nullable=False),
    Column("name", Text, nullable=True),
    Column("config", S.JSONT, nullable=False),
    Column("state", String(16), nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("created_at", Float, nullable=False),
    PrimaryKeyConstraint("project", "id"),
    Index("ix_sweeps_project_created", "project", "created_at"),
)

sweep_trials = Table(
    "sweep_trials",
    S.metadata,
    Column("project", String(128), nullable=False),
    Column("sweep_id", String(64), nullable=False),
    Column("number", Integer, nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("internal", S.JSONT, nullable=False),
    Column("system_attrs", S.JSONT, nullable=False),
    Column("params", S.JSONT, nullable=False),
    Column("intermediate", S.JSONT, nullable=False),
    Column("state", String(16), nullable=False),
    Column("value", Float, nullable=True),
    Column("agent_id", String(64), nullable=True),
    Column("agent_pid", BigInteger, nullable=True),
    Column("host", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=True),
    Column("finished_at", Float, nullable=True),
    PrimaryKeyConstraint("project", "sweep_id", "number"),
)

JSON_COLS = ("internal", "system_attrs", "params", "intermediate")
_TRIAL_COLS = tuple(c.name for c in sweep_trials.columns if c.name not in ("project", "sweep_id"))
_UPDATABLE = frozenset(_TRIAL_COLS) - {"number"}


class SweepTables:
    """Sweep rows in the server's database (the run store's engine)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.engine = store.engine

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            conn.execution_options(wisp_write=True)
            with conn.begin():
                yield conn

    def create(self, row: dict[str, Any]) -> bool:
        try:
            with self._tx() as conn:
                conn.execute(sweeps.insert(), [row])
        except IntegrityError:
            return False
        return True

    def get(self, project: str, sweep_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(sweeps).where(_is(project, sweep_id))).first()
        return None if row is None else dict(row._mapping)

    def list_sweeps(
        self,
        project: str | None,
        sweep_id: str | None = None,
        readable: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The newest 1000 sweeps (of ``project``, with id ``sweep_id``, in the ``readable``
        projects: None for all), with their trial counts and last heartbeat."""
        t = sweep_trials.c
        counts = (
            select(
                t.project,
                t.sweep_id,
                func.count().label("n"),
                func.max(t.heartbeat_at).label("seen"),
            )
            .group_by(t.project, t.sweep_id)
            .subquery()
        )
        q = select(sweeps, counts.c.n, counts.c.seen).outerjoin(
            counts, (counts.c.project == sweeps.c.project) & (counts.c.sweep_id == sweeps.c.id)
        )
        if project is not None:
            q = q.where(sweeps.c.project == project)
        if sweep_id is not None:
            q = q.where(sweeps.c.id == sweep_id)
        if readable is not None:  # before the limit: others' sweeps never crowd out one's own
            q = q.where(sweeps.c.project.in_(sorted(readable)))
        q = q.order_by(sweeps.c.created_at.desc()).limit(1000)
        with self.engine.connect() as conn:
            out = []
            for row in conn.execute(q):
                m = dict(row._mapping)
                m["trial_count"] = m.pop("n") or 0
                m["last_activity"] = m.pop("seen")
                out.append(m)
        return out

    def set_state(self, project: str, sweep_id: str, state: str) -> bool:
        with self._tx() as conn:
            res = conn.execute(update(sweeps).where(_is(project, sweep_id)).values(state=state))
        return bool(res.rowcount)

    def trials(self, project: str, sweep_id: str) -> list[dict[str, Any]]:
        c = sweep_trials.c
        q = (
            select(*[c[n] for n in _TRIAL_COLS])
            .where(c.project == project, c.sweep_id == sweep_id)
            .order_by(c.number)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def add_trial(self, project: str, sweep_id: str, trial: dict[str, Any]) -> bool:
        row = {**trial, "project": project, "sweep_id": sweep_id}
        try:
            with self._tx() as conn:
                conn.execute(sweep_trials.insert(), [row])
        except IntegrityError:
            return False
        return True

    def update_trial(
        self, project: str, sweep_id: str, number: int, fields: dict[str, Any], only_running: bool
    ) -> bool:
        c = sweep_trials.c
        cond = (c.project == project) & (c.sweep_id == sweep_id) & (c.number == number)
        if only_running:
            cond = cond & (c.state == "running")
        with self._tx() as conn:
            res = conn.execute(update(sweep_trials).where(cond).values(**fields))
        return bool(res.rowcount)

    def runs(self, project: str, sweep_id: str) -> list[dict[str, Any]]:
        """The runs of the sweep's project whose metadata names this sweep, with their
        trial's number/state/value (a run in another project is not this sweep's)."""
        r = S.runs
        q = (
            select(r)
            .where(r.c.project == project, r.c.meta["sweep_id"].as_string() == sweep_id)
            .order_by(r.c.created_at)
            .limit(10_000)
        )
        by_run = {t["run_id"]: t for t in self.trials(project, sweep_id)}
        out = []
        with self.engine.connect() as conn:
            for row in conn.execute(q):
                run = self.store.run_dict(row)
                t = by_run.get(run["id"])
                run["trial"] = (
                    None if t is None else {k: t[k] for k in ("number", "state", "value", "params")}
                )
                out.append(run)
        return out


def _is(project: str, sweep_id: str) -> Any:
    """The condition for one sweep: its project and its id."""
    return (sweeps.c.project == project) & (sweeps.c.id == sweep_id)
