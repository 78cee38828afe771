"""The runs table: create, update, read, heartbeat, projects, and the reported state.

A run has two names: the id its client chose (``given_id``, unique per project) and the
server's *run key* (``runs.id``, unique on the server), which every other table and every
``/runs/{key}`` URL use.  The key is the id itself for the first run that uses it, and the
id plus a random suffix when a run in another project had that id first: two people's
``init(project=..., id="exp1")`` in two projects are two runs, never one merged run.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, bindparam, case, func, select, update
from sqlalchemy.engine import Connection

from wisp._protocol import RecordType
from wisp.server.http.problem import Problem
from wisp.server.store import schema as S
from wisp.server.store.db import Db
from wisp.server.store.projects import ProjectStore

__all__ = ["RunStore", "with_config_json"]

# statements run for every upload, built once (building one costs more than running it)
_R = S.runs.c
_RESOLVE = select(_R.id).where(_R.project == bindparam("project"), _R.given_id == bindparam("rid"))
_PROJECT = select(_R.project).where(_R.id == bindparam("key"))
_EXISTS = select(_R.id).where(_R.id == bindparam("key"))
_GEN = select(_R.gen).where(_R.id == bindparam("key"))
#: ``UPDATE runs SET <the parameters' columns> WHERE id = :run_key``
UPDATE_RUN = update(S.runs).where(_R.id == bindparam("run_key"))
#: a run marked ``crashed`` (heartbeats stopped) that is heard from again is running again
REVIVE = (
    update(S.runs)
    .where(_R.id == bindparam("run_key"), _R.state == "crashed")
    .values(state="running", finished_at=None)
)


def with_config_json(cols: dict[str, Any]) -> dict[str, Any]:
    """Run columns with ``config_json`` beside a ``config`` they set and ``summary_json``
    beside a ``summary``: each in the key order it was logged, which the JSONB columns of
    PostgreSQL do not keep."""
    return {**cols, **{f"{c}_json": cols[c] for c in ("config", "summary") if c in cols}}


class RunStore:
    """Runs; a ``running`` run not heard from for ``heartbeat_timeout`` s reads as ``crashed``."""

    def __init__(self, db: Db, heartbeat_timeout: float, guard: ProjectStore) -> None:
        self.db = db
        self.heartbeat_timeout = heartbeat_timeout
        self.guard = guard
        self._insert = db.dialect.insert(S.runs).on_conflict_do_nothing()

    def state_expr(self) -> Any:
        """SQL for the reported state: ``running`` past the heartbeat timeout is ``crashed``."""
        r = S.runs.c
        cutoff = self.db.clock() - self.heartbeat_timeout
        return case((and_(r.state == "running", r.last_seen < cutoff), "crashed"), else_=r.state)

    def stalled_expr(self) -> Any:
        """SQL for ``stalled``: seconds since a running run last logged a step (or started)."""
        r = S.runs.c
        since = func.coalesce(r.stepped_at, r.created_at)
        return case((r.state == "running", self.db.clock() - since), else_=None)

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
            "id": m["given_id"],
            "key": m["id"],
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
            "config": m["config"] if m.get("config_json") is None else m["config_json"],
            "summary": m["summary"] if m.get("summary_json") is None else m["summary_json"],
        }

    def create(self, conn: Connection, run_id: str, cols: dict[str, Any]) -> str:
        """Insert the run with the id ``run_id`` in ``cols['project']`` unless that project has
        one (inside the caller's transaction); returns its key.  The key is ``run_id`` when
        free, else ``run_id`` with a random suffix."""
        return self._create(conn, run_id, cols)[0]

    def _create(self, conn: Connection, run_id: str, cols: dict[str, Any]) -> tuple[str, bool]:
        """:meth:`create`, and whether this call inserted the run with every column of
        ``cols`` (then no UPDATE with them is needed)."""
        project = cols["project"]
        found = self.resolve(conn, project, run_id)
        if found is not None:
            self.guard.on_write(conn, found, None)
            return found, False
        now = self.db.clock()
        owner = self.guard.on_create(conn, cols)
        key = run_id
        for _ in range(8):
            if not self.exists(conn, key):
                break
            key = f"{run_id[:47]}-{secrets.token_hex(8)}"
        taken: dict[str, Any] = {  # the columns a new run takes from ``cols``, with their defaults
            "name": run_id,
            "state": "running",
            "tags": [],
            "notes": "",
            "run_group": None,
            "job_type": None,
            "config": {},
            "summary": {},
            "meta": {},
            "created_at": now,
            "finished_at": None,
        }
        row = {
            "id": key,
            "given_id": run_id,
            "gen": secrets.token_hex(8),
            "project": project,
            **with_config_json({c: cols.get(c, default) for c, default in taken.items()}),
            "exit_code": None,
            "last_seen": now,
            "owner_id": owner,
        }
        # any unique violation (the key, or the project's id) is a race lost to another
        # writer: the run that won is looked up again and must be the caller's
        inserted = conn.execute(self._insert, row).rowcount == 1
        won = self.resolve(conn, project, run_id)
        if won is None:
            raise Problem(
                409, "run_id_taken", f"run key {key!r} was taken meanwhile: try again", "run_id"
            )
        if won != key:
            self.guard.on_write(conn, won, None)
        whole = all(c == "project" or c in taken for c in cols)
        return won, inserted and won == key and whole

    def exists(self, conn: Connection, key: str) -> bool:
        return conn.execute(_EXISTS, {"key": key}).first() is not None

    def gen(self, conn: Connection, key: str) -> str | None:
        """The run's generation token ("" for runs from before them); None: no such run."""
        row = conn.execute(_GEN, {"key": key}).first()
        return None if row is None else (row[0] or "")

    def resolve(self, conn: Connection, project: str, run_id: str) -> str | None:
        """The key of the run with id ``run_id`` in ``project``, None when there is none."""
        got = conn.execute(_RESOLVE, {"project": project, "rid": run_id}).first()
        return None if got is None else str(got[0])

    def key_of(self, project: str, run_id: str) -> str | None:
        with self.db.read() as conn:
            return self.resolve(conn, project, run_id)

    def put(self, run_id: str, cols: dict[str, Any], by_project: bool = False) -> dict[str, Any]:
        """Create or update a run with already validated columns; returns the run.

        ``by_project``: ``run_id`` is the run's id in ``cols['project']`` (created when the
        project has no such run).  Otherwise ``run_id`` is the run's key, and a new run is
        created under it only if its project has no run with that id under another key.
        A run never changes project here: a different project is a 409.
        """
        with self.db.tx() as conn:
            key = self.put_in(conn, run_id, cols, by_project)
            row = conn.execute(select(S.runs).where(S.runs.c.id == key)).one()
        return self.run_dict(row)

    def put_in(
        self, conn: Connection, run_id: str, cols: dict[str, Any], by_project: bool = False
    ) -> str:
        """:meth:`put` inside the caller's write transaction; returns the run's key."""
        project = cols.get("project")
        key: str | None = run_id
        if by_project:
            if project is None:
                raise Problem(422, "invalid", "project: required with by_project", "project")
            key = self.resolve(conn, project, run_id)
            cur = None if key is None else project  # resolved in that project
        else:
            cur = self._project(conn, run_id)
        vals = with_config_json({k: v for k, v in cols.items() if k != "project"})
        if cur is None:
            if project is None:
                raise Problem(422, "invalid", "project: required to create a run", "project")
            if not by_project:
                self.check_legacy(conn, project, run_id)
            key, whole = self._create(conn, run_id, cols)
            if whole:
                return key  # inserted with these columns just now
        else:
            assert key is not None
            self.guard.on_write(conn, key, cols)
            if project is not None and project != cur:
                raise Problem(
                    409,
                    "run_in_other_project",
                    f"run {run_id!r} is in project {cur!r}: runs do not move between "
                    f"projects (run ids are unique per project; update the client)",
                    "project",
                )
        if vals:
            conn.execute(UPDATE_RUN, {**vals, "run_key": key})
        return key

    def _project(self, conn: Connection, key: str) -> str | None:
        got = conn.execute(_PROJECT, {"key": key}).first()
        return None if got is None else str(got[0])

    def check_legacy(self, conn: Connection, project: str, run_id: str) -> None:
        """A client addressing runs by key asks for a run whose id its project holds under
        another key: it could not reach that run, so refuse rather than fork it."""
        found = self.resolve(conn, project, run_id)
        if found is not None and found != run_id:
            raise Problem(
                409,
                "run_id_taken",
                f"run {run_id!r} of project {project!r} has the key {found!r}: "
                "update the client (it must address runs by key)",
                "run_id",
            )

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
            conn.execute(REVIVE, {"run_key": run_id})
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
