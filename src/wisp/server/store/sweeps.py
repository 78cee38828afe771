"""Sweeps in the database: two tables and their queries (:class:`SweepTables`).

Tables (Alembic revision ``0002``):

- ``sweeps``        one row per sweep: id, project, name, config (the sweep file as JSON),
                    state, seed, created_at.
- ``sweep_trials``  one row per (sweep_id, number): run_id, internal, system_attrs, params,
                    intermediate (JSON), state, value, agent_id, agent_pid, host, created_at,
                    heartbeat_at, finished_at.

The trial number is the primary key, so a second agent claiming the same number is refused
(``add_trial`` answers False).  The endpoints are :mod:`wisp.server.views.sweeps`.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    Column("id", String(64), primary_key=True),
    Column("project", String(128), nullable=True),
    Column("name", Text, nullable=True),
    Column("config", S.JSONT, nullable=False),
    Column("state", String(16), nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_sweeps_project_created", "project", "created_at"),
)

sweep_trials = Table(
    "sweep_trials",
    S.metadata,
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
    PrimaryKeyConstraint("sweep_id", "number"),
)

_SWEEP_COLS = ("id", "project", "name", "config", "state", "seed", "created_at")
JSON_COLS = ("internal", "system_attrs", "params", "intermediate")
_TRIAL_COLS = tuple(c.name for c in sweep_trials.columns if c.name != "sweep_id")
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

    def get(self, sweep_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(sweeps).where(sweeps.c.id == sweep_id)).first()
        return None if row is None else dict(row._mapping)

    def list_sweeps(self, project: str | None) -> list[dict[str, Any]]:
        t = sweep_trials.c
        counts = (
            select(t.sweep_id, func.count().label("n"), func.max(t.heartbeat_at).label("seen"))
            .group_by(t.sweep_id)
            .subquery()
        )
        q = select(sweeps, counts.c.n, counts.c.seen).outerjoin(
            counts, counts.c.sweep_id == sweeps.c.id
        )
        if project is not None:
            q = q.where(sweeps.c.project == project)
        q = q.order_by(sweeps.c.created_at.desc()).limit(1000)
        with self.engine.connect() as conn:
            out = []
            for row in conn.execute(q):
                m = dict(row._mapping)
                m["trial_count"] = m.pop("n") or 0
                m["last_activity"] = m.pop("seen")
                out.append(m)
        return out

    def set_state(self, sweep_id: str, state: str) -> bool:
        with self._tx() as conn:
            res = conn.execute(update(sweeps).where(sweeps.c.id == sweep_id).values(state=state))
        return bool(res.rowcount)

    def trials(self, sweep_id: str) -> list[dict[str, Any]]:
        q = (
            select(*[sweep_trials.c[c] for c in _TRIAL_COLS])
            .where(sweep_trials.c.sweep_id == sweep_id)
            .order_by(sweep_trials.c.number)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def add_trial(self, sweep_id: str, trial: dict[str, Any]) -> bool:
        try:
            with self._tx() as conn:
                conn.execute(sweep_trials.insert(), [{**trial, "sweep_id": sweep_id}])
        except IntegrityError:
            return False
        return True

    def update_trial(
        self, sweep_id: str, number: int, fields: dict[str, Any], only_running: bool
    ) -> bool:
        c = sweep_trials.c
        cond = (c.sweep_id == sweep_id) & (c.number == number)
        if only_running:
            cond = cond & (c.state == "running")
        with self._tx() as conn:
            res = conn.execute(update(sweep_trials).where(cond).values(**fields))
        return bool(res.rowcount)

    def runs(self, sweep_id: str) -> list[dict[str, Any]]:
        """The runs whose metadata names this sweep, with their trial's number/state/value."""
        r = S.runs
        q = (
            select(r)
            .where(r.c.meta["sweep_id"].as_string() == sweep_id)
            .order_by(r.c.created_at)
            .limit(10_000)
        )
        by_run = {t["run_id"]: t for t in self.trials(sweep_id)}
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
