"""Projects with owners and visibility, the runs' write guard, media rights, the audit log.

The write guard is where run ownership is enforced: the run and record stores call it
inside their write transaction (so two people racing for one run id cannot both win), with
the caller taken from :data:`wisp.server.rights.matrix.ACTOR` (set by the auth middleware; unset for
trusted callers with database access).  A project seen for the first time is created owned
by the caller, ``private``.  Run ids are unique per project (the runs table tells the
server's run key from the id, :mod:`wisp.server.store.runs`): a run id taken in a project by another
user is a 409, never a merge.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select
from sqlalchemy.engine import Connection

from wisp._protocol import clean_text, project_entity, project_problem
from wisp.server.http.problem import Problem
from wisp.server.rights.matrix import (
    ACTOR,
    VISIBILITIES,
    Principal,
    ProjectInfo,
    can_admin_project,
    can_create_under,
    can_read_project,
    can_write_project,
)
from wisp.server.store import schema as S
from wisp.server.store.db import Db
from wisp.server.store.users import entity_in

__all__ = ["ProjectStore"]

# "project": a PUT names the run's project (it never moves: _store_runs refuses another one)
# statements of every run write, built once (building one costs more than running it)
_P = S.projects.c
_INFO = select(_P.owner_user, _P.owner_team, _P.visibility).where(_P.name == bindparam("name"))
_OWNER = select(S.runs.c.owner_id, S.runs.c.project, S.runs.c.given_id).where(
    S.runs.c.id == bindparam("key")
)
_BOUND = select(S.writers.c.user_id).where(
    S.writers.c.run_id == bindparam("run"), S.writers.c.writer_id == bindparam("writer")
)
_AUDIT = S.audit.insert()
_META_FIELDS = {"project", "name", "tags", "notes", "run_group", "job_type", "config", "meta"}


class ProjectStore:
    def __init__(self, db: Db) -> None:
        self.db = db

    # -- projects -----------------------------------------------------------------------------

    def info(self, conn: Connection, name: str) -> ProjectInfo | None:
        row = conn.execute(_INFO, {"name": name}).first()
        if row is None:
            return None
        teams: frozenset[int] = frozenset()
        if row.owner_user is not None and row.visibility == "team":
            m = S.team_members.c
            teams = frozenset(
                conn.execute(select(m.team_id).where(m.user_id == row.owner_user)).scalars()
            )
        return ProjectInfo(name, row.owner_user, row.owner_team, row.visibility, teams)

    def project(self, name: str) -> ProjectInfo | None:
        with self.db.read() as conn:
            return self.info(conn, name)

    def describe(self, name: str) -> dict[str, Any] | None:
        """``{name, owner, owner_kind, visibility}`` for the API."""
        info = self.project(name)
        if info is None:
            return None
        with self.db.read() as conn:
            if info.owner_user is not None:
                owner = conn.execute(
                    select(S.users.c.name).where(S.users.c.id == info.owner_user)
                ).scalar()
                kind = "user"
            else:
                owner = conn.execute(
                    select(S.teams.c.name).where(S.teams.c.id == info.owner_team)
                ).scalar()
                kind = "team"
        return {"name": name, "owner": owner, "owner_kind": kind, "visibility": info.visibility}

    def set_project(self, name: str, owner: tuple[str, int] | None, visibility: str | None) -> None:
        """Create or change a project: its owner (``("user"|"team", id)``) and visibility."""
        if visibility is not None and visibility not in VISIBILITIES:
            raise Problem(
                422,
                "invalid",
                f"visibility: expected one of {', '.join(VISIBILITIES)}",
                "visibility",
            )
        p = S.projects.c
        with self.db.tx() as conn:
            exists = conn.execute(select(p.name).where(p.name == name)).first() is not None
            if not exists and project_problem(name) is not None:
                raise Problem(422, "invalid", f"project: {project_problem(name)}", "project")
            entity = project_entity(name)[0]
            if entity and (owner is not None or not exists):  # entity/name is entity's
                ent = self._entity_owner(conn, name)
                if owner is not None and owner != ent:
                    raise Problem(
                        422,
                        "invalid",
                        f"owner: project {name!r} belongs to {entity!r} (its name says so); "
                        "to move it, create the project under the other owner",
                        "owner",
                    )
                owner = ent
            vals: dict[str, Any] = {}
            if owner is not None:
                vals["owner_user"] = owner[1] if owner[0] == "user" else None
                vals["owner_team"] = owner[1] if owner[0] == "team" else None
            if visibility is not None:
                vals["visibility"] = visibility
            if not exists:
                if owner is None:
                    raise Problem(422, "invalid", "owner: required to create a project", "owner")
                vals.setdefault("visibility", "team" if owner[0] == "team" else "private")
                conn.execute(
                    S.projects.insert(), [{"name": name, "created_at": self.db.clock(), **vals}]
                )
            elif vals:
                conn.execute(S.projects.update().where(p.name == name).values(**vals))

    def readable(self, p: Principal) -> Collection[str] | None:
        """The names of the projects ``p`` may read; None when it may read every project."""
        if p.is_admin or p.via == "local":
            return None
        out = []
        with self.db.read() as conn:
            for name in conn.execute(select(S.projects.c.name)).scalars():
                info = self.info(conn, name)
                if info is not None and can_read_project(p, info):
                    out.append(name)
        return out

    def run_owner(self, run_id: str) -> tuple[int | None, str] | None:
        """``(owner_id, project)`` of a run, None when there is no such run."""
        r = S.runs.c
        with self.db.read() as conn:
            row = conn.execute(select(r.owner_id, r.project).where(r.id == run_id)).first()
        return None if row is None else (row.owner_id, row.project)

    def run_projects(self, run_ids: list[str]) -> list[tuple[str, str]]:
        """``(run_id, project)`` of the runs that exist among ``run_ids``."""
        r = S.runs.c
        with self.db.read() as conn:
            return [
                (a, b) for a, b in conn.execute(select(r.id, r.project).where(r.id.in_(run_ids)))
            ]

    # -- the write guard ----------------------------------------------------------------------

    def _entity_owner(self, conn: Connection, project: str) -> tuple[str, int]:
        """The owner ``("user"|"team", id)`` that ``entity/name`` names (404 if none)."""
        entity = project_entity(project)[0]
        got = entity_in(conn, entity)
        if got is None:
            raise Problem(
                404,
                "entity_not_found",
                f"no user or team named {entity!r} (project {project!r} names it as its owner)",
                "project",
            )
        return got

    def may_create(self, actor: Principal, project: str) -> None:
        """403/404 unless ``actor`` may create ``project`` (its entity's user or members)."""
        if project_entity(project)[0]:
            with self.db.read() as conn:
                self._need_creator(conn, actor, project)

    def _need_creator(self, conn: Connection, actor: Principal, project: str) -> tuple[str, int]:
        if actor.is_admin and actor.user_id is not None:  # site admins name projects freely
            known = entity_in(conn, project_entity(project)[0])  # (wisp ui's importer is one)
            return known if known is not None else ("user", actor.user_id)
        owner = self._entity_owner(conn, project)
        if not can_create_under(actor, owner):
            entity = project_entity(project)[0]
            raise Problem(
                403,
                "forbidden",
                f"{actor.name!r} may not create projects under {entity!r}: only that user, or "
                "members of that team, create projects named after it",
                "project",
            )
        return owner

    def ensure_project(self, actor: Principal, project: str) -> None:
        """Create ``project`` as a first run in it would (403 unless ``actor`` may create it),
        or check ``actor`` may write to it: for objects made before the project's first run
        (sweeps, artifacts, workspaces), which then have its rights from the first moment."""
        with self.db.tx() as conn:
            self._ensure_writable(conn, actor, project)

    def _ensure_writable(self, conn: Connection, actor: Principal, project: str) -> None:
        info = self.info(conn, project)
        if info is None:
            if project_problem(project) is not None:
                raise Problem(422, "invalid", f"project: {project_problem(project)}", "project")
            if actor.user_id is None:
                raise Problem(401, "unauthorized", "creating a project needs a signed-in user")
            owner = ("user", actor.user_id)
            if project_entity(project)[0]:
                owner = self._need_creator(conn, actor, project)
            row = {
                "name": project,
                "owner_user": owner[1] if owner[0] == "user" else None,
                "owner_team": owner[1] if owner[0] == "team" else None,
                "visibility": "team" if owner[0] == "team" else "private",
                "created_at": self.db.clock(),
            }
            self.db.dialect.insert_ignore(conn, S.projects, [row], ["name"])
            info = self.info(conn, project)
        if info is None or not can_write_project(actor, info):
            raise Problem(
                403,
                "forbidden",
                f"{actor.name!r} may not create runs in project {project!r}",
                "project",
            )

    def on_create(self, conn: Connection, cols: dict[str, Any]) -> int | None:
        """Check the caller may create a run in ``cols['project']``; returns the owner id."""
        actor = ACTOR.get()
        if actor is None:
            return None
        self._ensure_writable(conn, actor, cols["project"])
        return actor.user_id

    def on_write(self, conn: Connection, run_id: str, cols: dict[str, Any] | None) -> None:
        """Refuse a write to an existing run by anyone but its owner (409 on an id collision).

        ``cols`` is the metadata of a ``PUT /runs/{id}``: a project admin may change the
        name, tags, notes, group, job type, config and metadata of someone else's run.
        """
        actor = ACTOR.get()
        if actor is None:
            return
        row = conn.execute(_OWNER, {"key": run_id}).first()
        if row is None:
            return
        info = self.info(conn, row.project)
        if row.owner_id is not None and row.owner_id == actor.user_id:
            return
        if actor.is_admin and row.owner_id is None:
            return
        if (
            cols is not None
            and set(cols) <= _META_FIELDS
            and info is not None
            and can_admin_project(actor, info)
        ):
            return
        if info is not None and can_read_project(actor, info):
            raise Problem(
                409,
                "run_owned",
                f"run {row.given_id!r} in project {row.project!r} belongs to another user: "
                "only its owner writes to it (choose another run id)",
                "run_id",
            )
        raise Problem(
            409,
            "run_id_taken",
            f"run id {row.given_id!r} is taken in that project: choose another",
            "run_id",
        )

    def on_writer(self, conn: Connection, run_id: str, writer_id: str) -> int | None:
        """The user a new writer is bound to; 409 when the writer belongs to another user."""
        actor = ACTOR.get()
        if actor is None:
            return None
        bound = conn.execute(_BOUND, {"run": run_id, "writer": writer_id}).first()
        if bound is not None and bound[0] is not None and bound[0] != actor.user_id:
            raise Problem(
                409,
                "writer_owned",
                f"writer {writer_id!r} of run {run_id!r} was opened by another user's key",
                "writer_id",
            )
        return actor.user_id

    # -- media --------------------------------------------------------------------------------

    def add_media_owner(self, sha: str, user_id: int) -> None:
        row = {"sha256": sha, "user_id": user_id}
        with self.db.tx() as conn:
            self.db.dialect.insert_ignore(conn, S.media_owners, [row], ["sha256", "user_id"])

    def add_media_refs(self, conn: Connection, run_id: str, shas: set[str]) -> None:
        """Record that ``run_id``'s media name ``shas``, each with the right of whoever logs
        it (the request's actor): a blob they may read now counts for the run's readers at
        once; any other counts only once they send its bytes (``user_id`` on the row)."""
        if not shas:
            return
        actor = ACTOR.get()
        pending: set[str] = set()
        if actor is not None and not actor.is_admin and actor.via != "local":
            pending = set(shas) - self._readable_blobs_in(conn, actor, sorted(shas))
        uid = actor.user_id if actor is not None else None
        rows = [
            {"sha256": s, "run_id": run_id, "user_id": uid if s in pending else None}
            for s in sorted(shas)
        ]
        self.db.dialect.insert_ignore(conn, S.media_refs, rows, ["sha256", "run_id"])

    def media_usage(self, user_id: int) -> int:
        o, f = S.media_owners.c, S.media_files.c
        q = (
            select(func.coalesce(func.sum(f.size), 0))
            .join_from(S.media_owners, S.media_files, o.sha256 == f.sha256)
            .where(o.user_id == user_id)
        )
        with self.db.read() as conn:
            return int(conn.execute(q).scalar_one())

    def can_read_media(self, p: Principal, sha: str) -> bool:
        """Uploaded by ``p``, or referenced by a run or an artifact version ``p`` may read."""
        return sha in self.readable_blobs(p, [sha])

    def readable_blobs(self, p: Principal, shas: list[str]) -> set[str]:
        """Those of ``shas`` whose bytes ``p`` may read (docs/server.md, "Blobs"): blobs ``p``
        sent the bytes of (``media_owners``), that a run's media in a project ``p`` may read
        refers to *with its logger's right*, or that an artifact version's manifest in a
        project ``p`` may read names (publishing checks the publisher's right to every file).
        Knowing or naming a sha256 is not a right to its bytes.  The one rule for media and
        artifact files alike."""
        with self.db.read() as conn:
            return self._readable_blobs_in(conn, p, shas)

    def _readable_blobs_in(self, conn: Connection, p: Principal, shas: list[str]) -> set[str]:
        from wisp.server.store.artifacts import artifact_file_refs, artifact_versions, artifacts

        want = list(dict.fromkeys(shas))
        if p.is_admin or p.via == "local":
            return set(want)
        o, m, r = S.media_owners.c, S.media_refs.c, S.runs.c
        fr, v, a = artifact_file_refs.c, artifact_versions.c, artifacts.c
        logger_sent = (
            select(o.sha256).where(and_(o.sha256 == m.sha256, o.user_id == m.user_id)).exists()
        )
        out: set[str] = set()
        by_project: dict[str, set[str]] = {}
        for i in range(0, len(want), 500):
            part = want[i : i + 500]
            if p.user_id is not None:
                out.update(
                    conn.execute(
                        select(o.sha256).where(o.sha256.in_(part), o.user_id == p.user_id)
                    ).scalars()
                )
            part = [x for x in part if x not in out]
            if not part:
                continue
            runs_q = (
                select(m.sha256, r.project)
                .join_from(S.media_refs, S.runs, m.run_id == r.id)
                .where(m.sha256.in_(part), or_(m.user_id.is_(None), logger_sent))
                .distinct()
            )
            arts_q = (
                select(fr.sha256, a.project)
                .join_from(artifact_file_refs, artifact_versions, fr.version_id == v.id)
                .join(artifacts, v.artifact_id == a.id)
                .where(fr.sha256.in_(part))
                .distinct()
            )
            for q in (runs_q, arts_q):
                for sha, project in conn.execute(q.limit(100_000)):
                    by_project.setdefault(project, set()).add(sha)
        for name, got in by_project.items():
            if got <= out:
                continue
            info = self.info(conn, name)
            if info is not None and can_read_project(p, info):
                out |= got
        return out

    def orphan_media(self, before: float) -> list[tuple[str, int]]:
        """``(sha256, size)`` of blobs recorded before ``before`` that no run refers to."""
        f, m = S.media_files.c, S.media_refs.c
        q = select(f.sha256, f.size).where(
            f.created_at < before, ~select(m.sha256).where(m.sha256 == f.sha256).exists()
        )
        with self.db.read() as conn:
            return [(str(a), int(b)) for a, b in conn.execute(q)]

    def forget_media(self, sha: str) -> None:
        """Drop a blob from the index (its bytes are deleted by the caller)."""
        with self.db.tx() as conn:
            conn.execute(S.media_owners.delete().where(S.media_owners.c.sha256 == sha))
            conn.execute(S.media_files.delete().where(S.media_files.c.sha256 == sha))

    # -- audit --------------------------------------------------------------------------------

    def audit(
        self, actor: Principal | None, action: str, target: str, status: int, addr: str
    ) -> None:
        with self.db.tx() as conn:
            self.audit_in(conn, actor, action, target, status, addr)

    def audit_in(
        self,
        conn: Connection,
        actor: Principal | None,
        action: str,
        target: str,
        status: int,
        addr: str,
    ) -> None:
        """:meth:`audit` inside the caller's write transaction."""
        row = {
            "ts": self.db.clock(),
            "user_id": actor.user_id if actor else None,
            "actor": (actor.name if actor and actor.name else "anonymous")[:64],
            "action": action[:64],
            "target": clean_text(target[:2000]),  # a refused request's path may hold NUL
            "status": status,
            "addr": addr[:64],
        }
        conn.execute(_AUDIT, [row])

    def audit_log(
        self, limit: int, before: int | None = None, user: str | None = None
    ) -> list[dict[str, Any]]:
        a = S.audit.c
        q = select(a.id, a.ts, a.actor, a.action, a.target, a.status, a.addr)
        if before is not None:
            q = q.where(a.id < before)
        if user is not None:
            q = q.where(a.actor == user)
        with self.db.read() as conn:
            return [dict(r._mapping) for r in conn.execute(q.order_by(a.id.desc()).limit(limit))]
