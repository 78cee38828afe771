"""The storage interface of the server: one :class:`Store` over SQLite or PostgreSQL.

``open_store(url)`` builds the engine (backend driver imported lazily), runs the
Alembic migrations and returns a :class:`Store`.  All SQL is SQLAlchemy Core with
bound parameters, except the bulk paths for numeric points in :mod:`._points`
(driver-level multi-row ``INSERT`` on SQLite, binary ``COPY`` on PostgreSQL, also
parameterised).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import and_, case, func, select, update
from sqlalchemy.engine import Connection, Engine

from wisp._protocol import RecordType
from wisp.server import _schema as S
from wisp.server._db import make_engine, migrate
from wisp.server._ingest import Prepared, conflict
from wisp.server._points import lock_series, merge_blocks, update_blocks, write_points
from wisp.server._problem import Problem

__all__ = ["SCOPES", "Store", "open_store"]

SCOPES = ("read", "write", "admin")
_KEY_CACHE_MAX = 200_000


def open_store(
    url: str,
    *,
    heartbeat_timeout: float = 300.0,
    clock: Callable[[], float] = time.time,
    run_migrations: bool = True,
) -> Store:
    """Open (and migrate) the database at ``url``: ``sqlite:///path`` or ``postgresql://...``."""
    engine = make_engine(url)
    if run_migrations:
        migrate(engine)
    return Store(engine, heartbeat_timeout=heartbeat_timeout, clock=clock)


class Store:
    """Runs, records, series, media index and API keys in one SQL database."""

    def __init__(self, engine: Engine, *, heartbeat_timeout: float, clock: Callable[[], float]):
        self.engine = engine
        self.pg = engine.dialect.name == "postgresql"
        self.heartbeat_timeout = heartbeat_timeout
        self.clock = clock
        self._key_ids: dict[tuple[str, str], int] = {}

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
        with self.engine.connect() as conn:
            conn.execution_options(wisp_write=True)
            with conn.begin():
                yield conn

    # -- helpers ------------------------------------------------------------------------------

    def _insert(self, table: Any) -> Any:
        if self.pg:
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table)
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)

    def _upsert(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str]
    ) -> None:
        if not rows:
            return
        if self.pg:  # ON CONFLICT may not touch one row twice in a statement: last wins
            rows = list({tuple(r[k] for k in keys): r for r in rows}.values())
        stmt = self._insert(table)
        cols = [c for c in rows[0] if c not in keys]
        if cols:
            stmt = stmt.on_conflict_do_update(
                index_elements=keys, set_={c: stmt.excluded[c] for c in cols}
            )
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=keys)
        conn.execute(stmt, rows)

    def state_expr(self) -> Any:
        """SQL for the reported state: ``running`` past the heartbeat timeout is ``crashed``."""
        r = S.runs.c
        cutoff = self.clock() - self.heartbeat_timeout
        return case((and_(r.state == "running", r.last_seen < cutoff), "crashed"), else_=r.state)

    def duration_expr(self) -> Any:
        r = S.runs.c
        return func.coalesce(r.finished_at, r.last_seen) - r.created_at

    def run_dict(self, row: Any) -> dict[str, Any]:
        m = row._mapping
        state = m["state"]
        if state == "running" and m["last_seen"] < self.clock() - self.heartbeat_timeout:
            state = "crashed"
        end = m["finished_at"] if m["finished_at"] is not None else m["last_seen"]
        return {
            "id": m["id"],
            "project": m["project"],
            "name": m["name"],
            "state": state,
            "tags": m["tags"],
            "group": m["run_group"],
            "job_type": m["job_type"],
            "notes": m["notes"],
            "created_at": m["created_at"],
            "finished_at": m["finished_at"],
            "duration": max(0.0, end - m["created_at"]),
            "exit_code": m["exit_code"],
            "heartbeat_at": m["last_seen"],
            "config": m["config"],
            "summary": m["summary"],
        }

    # -- runs ---------------------------------------------------------------------------------

    def _create_run(self, conn: Connection, run_id: str, cols: dict[str, Any]) -> None:
        now = self.clock()
        row = {
            "id": run_id,
            "project": cols["project"],
            "name": cols.get("name", run_id),
            "state": cols.get("state", "running"),
            "tags": cols.get("tags", []),
            "notes": cols.get("notes", ""),
            "run_group": cols.get("run_group"),
            "job_type": cols.get("job_type"),
            "config": cols.get("config", {}),
            "summary": cols.get("summary", {}),
            "meta": cols.get("meta", {}),
            "created_at": cols.get("created_at", now),
            "finished_at": cols.get("finished_at"),
            "exit_code": None,
            "last_seen": now,
        }
        conn.execute(self._insert(S.runs).on_conflict_do_nothing(index_elements=["id"]), [row])

    def put_run(self, run_id: str, cols: dict[str, Any]) -> dict[str, Any]:
        """Create or update a run with already validated columns; returns the run."""
        with self._tx() as conn:
            exists = conn.execute(select(S.runs.c.id).where(S.runs.c.id == run_id)).first()
            if exists is None:
                if "project" not in cols:
                    raise Problem(422, "invalid", "project: required to create a run", "project")
                self._create_run(conn, run_id, cols)
            elif cols:
                conn.execute(update(S.runs).where(S.runs.c.id == run_id).values(**cols))
            row = conn.execute(select(S.runs).where(S.runs.c.id == run_id)).one()
        return self.run_dict(row)

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(S.runs).where(S.runs.c.id == run_id)).first()
            if row is None:
                return None
            out = self.run_dict(row)
            out["metadata"] = row._mapping["meta"]
            keys = conn.execute(
                select(S.metric_keys.c.key)
                .where(S.metric_keys.c.run_id == run_id)
                .order_by(S.metric_keys.c.key)
            ).scalars()
            mkeys = set(keys)
            mkeys.update(
                conn.execute(
                    select(S.media_items.c.key).where(S.media_items.c.run_id == run_id).distinct()
                ).scalars()
            )
            out["metric_keys"] = sorted(mkeys)
            out["metrics"] = list(
                conn.execute(
                    select(S.run_metrics.c.spec)
                    .where(S.run_metrics.c.run_id == run_id)
                    .order_by(S.run_metrics.c.name)
                ).scalars()
            )
        return out

    def heartbeat(self, run_id: str) -> bool:
        with self._tx() as conn:
            res = conn.execute(
                update(S.runs).where(S.runs.c.id == run_id).values(last_seen=self.clock())
            )
            return bool(res.rowcount)

    def projects(self) -> list[dict[str, Any]]:
        r = S.runs.c
        q = (
            select(r.project, func.count(), func.max(r.last_seen))
            .group_by(r.project)
            .order_by(r.project)
        )
        with self.engine.connect() as conn:
            return [{"name": p, "run_count": n, "last_activity": t} for p, n, t in conn.execute(q)]

    # -- ingestion ----------------------------------------------------------------------------

    def acked_seq(self, run_id: str, writer_id: str) -> int:
        w = S.writers.c
        with self.engine.connect() as conn:
            v = conn.execute(
                select(w.acked_seq).where(w.run_id == run_id, w.writer_id == writer_id)
            ).scalar()
        return -1 if v is None else int(v)

    def ingest(self, run_id: str, writer_id: str, first_seq: int, records: list[Prepared]) -> int:
        """Apply ``records`` (seq ``first_seq + i``) exactly once; returns the acked seq."""
        w = S.writers.c
        new_keys: dict[tuple[str, str], int] = {}
        with self._tx() as conn:
            conn.execute(
                self._insert(S.writers).on_conflict_do_nothing(
                    index_elements=["run_id", "writer_id"]
                ),
                [{"run_id": run_id, "writer_id": writer_id, "acked_seq": -1}],
            )
            q = select(w.acked_seq).where(w.run_id == run_id, w.writer_id == writer_id)
            acked = int(conn.execute(q.with_for_update() if self.pg else q).scalar_one())
            if first_seq > acked + 1:
                raise conflict(acked)
            todo = records[acked + 1 - first_seq :]
            if not todo:
                return acked
            if self.pg:  # before any other write: see _points (blocks of concurrent writers)
                lock_series(conn, run_id, {c.key for rec in todo for c in rec.points})
            exists = conn.execute(select(S.runs.c.id).where(S.runs.c.id == run_id)).first()
            if exists is None:
                first = todo[0]
                if first.kind != RecordType.RUN or "project" not in first.data["cols"]:
                    raise Problem(
                        404,
                        "run_not_found",
                        f"run {run_id!r} does not exist: PUT /api/v1/runs/{run_id} first",
                        "run_id",
                    )
                self._create_run(conn, run_id, {**first.data["cols"], "meta": first.data["meta"]})
            for rec in todo:
                self._apply(conn, run_id, rec, new_keys)
            new_acked = first_seq + len(records) - 1
            conn.execute(
                update(S.writers)
                .where(w.run_id == run_id, w.writer_id == writer_id)
                .values(acked_seq=new_acked)
            )
            conn.execute(update(S.runs).where(S.runs.c.id == run_id).values(last_seen=self.clock()))
        if len(self._key_ids) > _KEY_CACHE_MAX:
            self._key_ids.clear()
        self._key_ids.update(new_keys)
        return new_acked

    def _apply(
        self, conn: Connection, run_id: str, rec: Prepared, new_keys: dict[tuple[str, str], int]
    ) -> None:
        d = rec.data
        r = S.runs
        if rec.kind == RecordType.HISTORY:
            self._apply_history(conn, run_id, rec, new_keys)
        elif rec.kind == RecordType.RUN:
            vals = {**d["cols"], "meta": d["meta"], "state": "running", "finished_at": None}
            conn.execute(update(r).where(r.c.id == run_id).values(**vals))
        elif rec.kind == RecordType.CONFIG:
            conn.execute(update(r).where(r.c.id == run_id).values(config=d["config"]))
        elif rec.kind == RecordType.SUMMARY:
            conn.execute(update(r).where(r.c.id == run_id).values(summary=d["summary"]))
        elif rec.kind == RecordType.METRIC:
            row = {"run_id": run_id, "name": d["name"], "spec": d["spec"]}
            self._upsert(conn, S.run_metrics, [row], ["run_id", "name"])
        elif rec.kind == RecordType.FINISH:
            fin = d["finished_at"] if d["finished_at"] is not None else self.clock()
            conn.execute(
                update(r)
                .where(r.c.id == run_id)
                .values(state=d["state"], finished_at=fin, exit_code=d["exit_code"])
            )
        elif rec.kind == RecordType.CONSOLE:
            rows = [{"run_id": run_id, "ts": ts, "stream": s, "text": t} for ts, s, t in d["lines"]]
            if rows:
                conn.execute(S.console.insert(), rows)
        else:
            if rec.kind == RecordType.RESUME:
                conn.execute(
                    update(r).where(r.c.id == run_id).values(state="running", finished_at=None)
                )
            conn.execute(
                S.events.insert(), [{"run_id": run_id, "type": rec.kind, "data": d["text"]}]
            )

    def _key_id_map(
        self, conn: Connection, run_id: str, keys: set[str], new_keys: dict[tuple[str, str], int]
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        missing = []
        for k in keys:
            kid = self._key_ids.get((run_id, k)) or new_keys.get((run_id, k))
            if kid is None:
                missing.append(k)
            else:
                out[k] = kid
        if missing:
            mk = S.metric_keys.c
            conn.execute(
                self._insert(S.metric_keys).on_conflict_do_nothing(
                    index_elements=["run_id", "key"]
                ),
                [{"run_id": run_id, "key": k} for k in missing],
            )
            for i in range(0, len(missing), 500):
                part = missing[i : i + 500]
                for kid, k in conn.execute(
                    select(mk.id, mk.key).where(mk.run_id == run_id, mk.key.in_(part))
                ):
                    out[k] = kid
                    new_keys[(run_id, k)] = kid
        return out

    def _apply_history(
        self, conn: Connection, run_id: str, rec: Prepared, new_keys: dict[tuple[str, str], int]
    ) -> None:
        cols = rec.points
        if cols:
            ids = self._key_id_map(conn, run_id, {c.key for c in cols}, new_keys)
            fresh = write_points(conn, self.pg, ids, cols)
            if fresh and all(c.blocks is not None for c in cols):
                merge_blocks(conn, self.pg, ids, cols)
            else:
                update_blocks(conn, ids, cols)
        if rec.extras:
            self._upsert(
                conn,
                S.extras,
                [{"run_id": run_id, "step": s, "time": t, "data": x} for s, t, x in rec.extras],
                ["run_id", "step"],
            )
        if rec.media:
            conn.execute(
                S.media_items.insert(),
                [
                    {"run_id": run_id, "key": k, "step": s, "time": t, "type": ty, "data": data}
                    for k, s, t, ty, data in rec.media
                ],
            )

    # -- media, console -----------------------------------------------------------------------

    def media_known(self, sha: str) -> dict[str, Any] | None:
        m = S.media_files.c
        with self.engine.connect() as conn:
            row = conn.execute(select(m.size, m.suffix).where(m.sha256 == sha)).first()
        return None if row is None else {"size": row[0], "suffix": row[1]}

    def media_add(self, sha: str, size: int, suffix: str) -> None:
        with self._tx() as conn:
            conn.execute(
                self._insert(S.media_files).on_conflict_do_nothing(index_elements=["sha256"]),
                [{"sha256": sha, "size": size, "suffix": suffix, "created_at": self.clock()}],
            )

    def media_items(self, run_id: str, key: str | None, limit: int) -> list[dict[str, Any]]:
        m = S.media_items.c
        q = select(m.key, m.step, m.type, m.data).where(m.run_id == run_id)
        if key is not None:
            q = q.where(m.key == key)
        q = q.order_by(m.key, m.step, m.id).limit(limit)
        with self.engine.connect() as conn:
            out = []
            for k, step, ty, data in conn.execute(q):
                item = {**data, "key": k, "step": step, "type": ty}
                out.append(item)
        return out

    def console_lines(self, run_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        c = S.console.c
        q = (
            select(c.id, c.ts, c.stream, c.text)
            .where(c.run_id == run_id, c.id > after)
            .order_by(c.id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [{"id": i, "ts": ts, "stream": s, "text": t} for i, ts, s, t in conn.execute(q)]

    # -- API keys -----------------------------------------------------------------------------

    def create_key(self, scope: str, name: str = "") -> tuple[str, str]:
        """A new API key ``(key_id, secret)``; only the sha256 of the secret is stored."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        key_id = secrets.token_hex(6)
        secret = f"wisp_{scope[0]}_{key_id}_{secrets.token_urlsafe(32)}"
        with self._tx() as conn:
            conn.execute(
                S.api_keys.insert(),
                [
                    {
                        "id": key_id,
                        "key_hash": hash_key(secret),
                        "scope": scope,
                        "name": name,
                        "created_at": self.clock(),
                        "revoked_at": None,
                    }
                ],
            )
        return key_id, secret

    def list_keys(self) -> list[dict[str, Any]]:
        k = S.api_keys.c
        q = select(k.id, k.scope, k.name, k.created_at, k.revoked_at).order_by(k.created_at)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def revoke_key(self, key_id: str) -> bool:
        k = S.api_keys.c
        with self._tx() as conn:
            res = conn.execute(
                update(S.api_keys)
                .where(k.id == key_id, k.revoked_at.is_(None))
                .values(revoked_at=self.clock())
            )
            return bool(res.rowcount)

    def key_scope(self, secret: str) -> str | None:
        k = S.api_keys.c
        with self.engine.connect() as conn:
            return conn.execute(
                select(k.scope).where(k.key_hash == hash_key(secret), k.revoked_at.is_(None))
            ).scalar()

    def iter_rows(self, q: Any) -> Iterator[Any]:
        with self.engine.connect() as conn:
            yield from conn.execute(q)


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)
