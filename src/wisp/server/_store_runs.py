"""The runs table: create, update, read, heartbeat, projects, and the reported state."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, case, func, select, update
from sqlalchemy.engine import Connection

from wisp._protocol import RecordType
from wisp.server import _schema as S
from wisp.server._db import Db
from wisp.server._problem import Problem
from wisp.server._store_projects import ProjectStore

__all__ = ["RunStore"]


class RunStore:
    """Runs; a ``running`` run not heard from for ``heartbeat_timeout`` s reads as ``crashed``."""

    def __init__(self, db: Db, heartbeat_timeout: float, guard: ProjectStore) -> None:
        self.db = db
        self.heartbeat_timeout = heartbeat_timeout
        self.guard = guard

    def state_expr(self) -> Any:
        """SQL for the reported state: ``running`` past the heartbeat timeout is ``crashed``."""
        r = S.runs.c
        cutoff = self.db.clock() - self.heartbeat_timeout
        return case((and_(r.state == "running", r.last_seen < cutoff), "crashed"), else_=r.state)

    def duration_expr(self) -> Any:
        r = S.runs.c
        return func.coalesce(r.finished_at, r.last_seen) - r.created_at

    def run_dict(self, row: Any) -> dict[str, Any]:
        m = row._mapping
        state = m["state"]
        if state == "running" and m["last_seen"] < self.db.clock() - self.heartbeat_timeout:
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

    def create(self, conn: Connection, run_id: str, cols: dict[str, Any]) -> None:
        """Insert the run unless it exists (inside the caller's transaction)."""
        now = self.db.clock()
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
            "owner_id": self.guard.on_create(conn, cols),
        }
        self.db.dialect.insert_ignore(conn, S.runs, [row], ["id"])
        self.guard.on_write(conn, run_id, None)  # lost a race for the id: not ours

    def exists(self, conn: Connection, run_id: str) -> bool:
        return conn.execute(select(S.runs.c.id).where(S.runs.c.id == run_id)).first() is not None

    def put(self, run_id: str, cols: dict[str, Any]) -> dict[str, Any]:
        """Create or update a run with already validated columns; returns the run."""
        with self.db.tx() as conn:
            if not self.exists(conn, run_id):
                if "project" not in cols:
                    raise Problem(422, "invalid", "project: required to create a run", "project")
                self.create(conn, run_id, cols)
            else:
                self.guard.on_write(conn, run_id, cols)
            if cols:
                conn.execute(update(S.runs).where(S.runs.c.id == run_id).values(**cols))
            row = conn.execute(select(S.runs).where(S.runs.c.id == run_id)).one()
        return self.run_dict(row)

    def get(self, run_id: str) -> dict[str, Any] | None:
        """The run with its metadata, metric and media keys and metric specs."""
        with self.db.read() as conn:
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
            mi = S.media_items.c
            media = dict(
                conn.execute(select(mi.key, mi.type).where(mi.run_id == run_id).distinct()).all()
            )
            mkeys.update(media)
            out["metric_keys"] = sorted(mkeys)
            out["media_keys"] = dict(sorted(media.items()))
            out["rejected"] = self._rejected(conn, run_id)
            out["metrics"] = list(
                conn.execute(
                    select(S.run_metrics.c.spec)
                    .where(S.run_metrics.c.run_id == run_id)
                    .order_by(S.run_metrics.c.name)
                ).scalars()
            )
        return out

    def _rejected(self, conn: Connection, run_id: str) -> int:
        """Records of the run its uploader set aside because this server refused them: the
        WARNING records ``{"kind": "rejected"}`` sent in their place, less those sent again
        successfully (``{"kind": "recovered"}``)."""
        e = S.events.c
        n = 0
        for text in conn.execute(
            select(e.data).where(e.run_id == run_id, e.type == RecordType.WARNING)
        ).scalars():
            try:
                kind = json.loads(text).get("kind")
            except (ValueError, AttributeError):
                continue
            n += 1 if kind == "rejected" else -1 if kind == "recovered" else 0
        return max(n, 0)

    def heartbeat(self, run_id: str) -> bool:
        with self.db.tx() as conn:
            self.guard.on_write(conn, run_id, None)
            res = conn.execute(
                update(S.runs).where(S.runs.c.id == run_id).values(last_seen=self.db.clock())
            )
            return bool(res.rowcount)

    def projects(self, readable: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Projects with runs (only those in ``readable`` when given)."""
        r = S.runs.c
        q = (
            select(r.project, func.count(), func.max(r.last_seen))
            .group_by(r.project)
            .order_by(r.project)
        )
        if readable is not None:
            q = q.where(r.project.in_(list(readable)))
        with self.db.read() as conn:
            return [{"name": p, "run_count": n, "last_activity": t} for p, n, t in conn.execute(q)]
