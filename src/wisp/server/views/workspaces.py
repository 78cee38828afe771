"""Grouped series and workspaces: the endpoints behind the dashboard's workspace page.

- ``POST /projects/{project}/series/grouped``: the project's runs (a filter or a list of
  ids) grouped by config/metadata keys, each metric aggregated per group (``series.grouped``).
- ``/projects/{project}/workspaces[/{id}]``: saved views (panels, grouping, filter), in the
  ``workspaces`` table (Alembic ``0007_workspaces``), each stored as a report without prose
  (``wisp.reports._workspace``: the report's panel model, since ``0014_workspaces_as_reports``).

Who sees and changes a workspace (the middleware checks reading the project first,
``_auth.RULES``): a *shared* workspace is seen by everyone who reads the project and
changed by its owner or anyone who may write to the project; a *private* one is seen and
changed by its owner only.  Saving needs a signed-in caller with a write key or a
session, and saving a shared workspace needs write rights on the project.  On a local
``--no-auth`` server (``wisp ui``) the local caller owns the workspaces it saves.
"""

from __future__ import annotations

import math
import secrets
from typing import Any

import msgspec
from sqlalchemy import delete, or_, select, update
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import need_project_write, principal_of
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem, clean_str, invalid
from wisp.server.http.routes import In, endpoint
from wisp.server.rights.matrix import Principal
from wisp.server.schemas import workspaces as T
from wisp.server.schemas.runs import ProjectRunsPath
from wisp.server.series.grouped import group_fields, grouped_series
from wisp.server.settings import ServerSettings
from wisp.server.store import schema as S
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_project

__all__ = ["WorkspaceApi"]

_MAX_PER_PROJECT = 1000


def _check_spec(spec: T.WorkspaceSpec) -> dict[str, Any]:
    """The spec as stored JSON; 422 naming the field for what msgspec cannot check."""
    clean_str(spec.filter, "spec.filter")
    for i, g in enumerate(spec.group_by):
        clean_str(g, f"spec.group_by[{i}]")
    try:
        group_fields(spec.group_by)
    except Problem as e:
        raise invalid("spec.group_by", e.message.partition(": ")[2]) from None
    for i, p in enumerate(spec.panels):
        for name in ("y_min", "y_max"):
            v = getattr(p, name)
            if v is not None and not math.isfinite(v):
                raise invalid(f"spec.panels[{i}].{name}", "expected a finite number")
        for k in p.keys:
            clean_str(k, f"spec.panels[{i}].keys")
        clean_str(p.title, f"spec.panels[{i}].title")
    ids = [p.id for p in spec.panels]
    if len(set(ids)) != len(ids):
        raise invalid("spec.panels", "panel ids must be unique")
    from wisp.errors import UsageError
    from wisp.reports._workspace import to_stored

    try:  # stored as a report without prose: the report's panel model and checks
        return to_stored(msgspec.to_builtins(spec))
    except UsageError as exc:
        raise invalid("spec", str(exc)) from None


def _spec_of(stored: dict[str, Any]) -> dict[str, Any]:
    """The API's ``WorkspaceSpec`` (every member) of a stored row's report model."""
    from wisp.reports._workspace import from_stored

    spec = msgspec.convert(from_stored(stored), T.WorkspaceSpec)
    out: dict[str, Any] = msgspec.to_builtins(spec)
    return out


def _owner_key(p: Principal) -> int | None:
    return p.user_id


def _visible(row: dict[str, Any], p: Principal) -> bool:
    if row["shared"]:
        return True
    if p.user_id is None:
        return p.via == "local" and row["owner_id"] is None
    return row["owner_id"] == p.user_id or p.is_admin


class WorkspaceApi:
    """Grouped series and the workspaces of a project."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store
        self.settings = settings

    # -- grouped series -----------------------------------------------------------------------

    @endpoint(
        "POST",
        "/projects/{project}/series/grouped",
        scope="read",
        summary="Runs grouped by config/metadata keys, each metric aggregated per group",
        description="Per group and bucket of a step grid shared by all runs: mean, median, "
        "std, min, max of the runs' last value in the bucket, and the min/max of every point "
        "(computed from the 64-step blocks). At most 1000 runs.",
        path_params=ProjectRunsPath,
        body=T.GroupedBody,
        responses={200: T.GroupedSeries},
    )
    async def grouped(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        b: T.GroupedBody = r.body
        clean_str(b.filter, "filter")
        for i, k in enumerate(b.keys):
            clean_str(k, f"keys[{i}]")
        for name in ("min", "max"):
            v = getattr(b, name)
            if v is not None and not math.isfinite(v):
                raise invalid(name, "expected a finite number")
        kw: dict[str, Any] = {
            "keys": list(dict.fromkeys(b.keys)),
            "group_by": [clean_str(g, "group_by") for g in b.group_by],
            "filter_expr": b.filter,
            "runs": b.runs,
            "lo": b.min,
            "hi": b.max,
            "buckets": b.buckets,
            "stats": tuple(dict.fromkeys(b.stats)),
        }
        out = await run_in_threadpool(lambda: grouped_series(self.store, project, **kw))
        return json_response(out)

    # -- workspaces ---------------------------------------------------------------------------

    def _owner_names(self, ids: set[int]) -> dict[int, str]:
        u = S.users.c
        if not ids:
            return {}
        with self.store.engine.connect() as conn:
            return dict(conn.execute(select(u.id, u.name).where(u.id.in_(sorted(ids)))).all())

    def _may_edit(self, row: dict[str, Any], p: Principal) -> bool:
        if p.via != "local" and (p.anonymous or p.scope == "read"):
            return False
        if row["owner_id"] is not None and row["owner_id"] == p.user_id:
            return True
        if not row["shared"]:
            return p.via == "local" and row["owner_id"] is None
        info = self.store.access.project(row["project"])
        from wisp.server.rights.matrix import can_write_project

        return p.is_admin or p.via == "local" or info is None or can_write_project(p, info)

    def _row(self, row: dict[str, Any], p: Principal, names: dict[int, str]) -> dict[str, Any]:
        out = {
            "id": row["id"],
            "project": row["project"],
            "name": row["name"],
            "owner": names.get(row["owner_id"]) if row["owner_id"] is not None else None,
            "shared": bool(row["shared"]),
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "can_edit": self._may_edit(row, p),
        }
        return out

    def _get(self, project: str, wid: str, p: Principal) -> dict[str, Any]:
        w = S.workspaces.c
        with self.store.engine.connect() as conn:
            row = conn.execute(
                select(S.workspaces).where(w.id == wid, w.project == project)
            ).first()
        got = None if row is None else dict(row._mapping)
        if got is None or not _visible(got, p):
            raise Problem(404, "workspace_not_found", f"no workspace {wid!r} in {project!r}")
        return got

    def _list(self, project: str, p: Principal) -> list[dict[str, Any]]:
        w = S.workspaces.c
        cond = w.project == project
        if not p.is_admin:
            mine = w.owner_id == p.user_id if p.user_id is not None else w.owner_id.is_(None)
            if p.user_id is None and p.via != "local":
                cond = cond & (w.shared == 1)
            else:
                cond = cond & or_(w.shared == 1, mine)
        q = select(S.workspaces).where(cond).order_by(w.updated_at.desc()).limit(_MAX_PER_PROJECT)
        with self.store.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(q)]
        names = self._owner_names({r["owner_id"] for r in rows if r["owner_id"] is not None})
        return [self._row(r, p, names) for r in rows]

    def _full(self, row: dict[str, Any], p: Principal) -> dict[str, Any]:
        names = self._owner_names({row["owner_id"]} if row["owner_id"] is not None else set())
        return {**self._row(row, p, names), "spec": _spec_of(row["spec"])}

    @endpoint(
        "GET",
        "/projects/{project}/workspaces",
        scope="read",
        summary="The workspaces of a project the caller may see (shared, and their own)",
        path_params=ProjectRunsPath,
        responses={200: T.WorkspaceList},
    )
    async def list_workspaces(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        p = principal_of(r.request)
        rows = await run_in_threadpool(self._list, project, p)
        return json_response({"workspaces": rows})

    @endpoint(
        "POST",
        "/projects/{project}/workspaces",
        scope="write",
        summary="Save a new workspace (shared ones need write rights on the project)",
        path_params=ProjectRunsPath,
        body=T.WorkspaceBody,
        responses={201: T.Workspace},
    )
    async def create_workspace(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        b: T.WorkspaceBody = r.body
        p = principal_of(r.request)
        spec = _check_spec(b.spec)
        name = clean_str(b.name, "name")
        if b.shared:
            need_project_write(r.request, project)
        now = self.store.clock()
        row = {
            "id": secrets.token_urlsafe(9),
            "project": project,
            "name": name,
            "owner_id": _owner_key(p),
            "shared": 1 if b.shared else 0,
            "spec": spec,
            "created_at": now,
            "updated_at": now,
        }

        def insert() -> None:
            with self.store.db.tx() as conn:
                conn.execute(S.workspaces.insert(), [row])

        await run_in_threadpool(insert)
        return json_response(await run_in_threadpool(self._full, row, p), 201)

    @endpoint(
        "GET",
        "/projects/{project}/workspaces/{workspace_id}",
        scope="read",
        summary="One workspace with its panels",
        path_params=T.WorkspacePath,
        responses={200: T.Workspace},
    )
    async def get_workspace(self, r: In) -> Response:
        path: T.WorkspacePath = r.path
        p = principal_of(r.request)
        row = await run_in_threadpool(self._get, path.project, path.workspace_id, p)
        return json_response(await run_in_threadpool(self._full, row, p))

    async def _editable(self, r: In) -> tuple[dict[str, Any], Principal]:
        path: T.WorkspacePath = r.path
        p = principal_of(r.request)
        row = await run_in_threadpool(self._get, path.project, path.workspace_id, p)
        if not await run_in_threadpool(self._may_edit, row, p):
            raise Problem(
                403, "forbidden", f"{p.name!r} may not change workspace {path.workspace_id!r}"
            )
        return row, p

    @endpoint(
        "PUT",
        "/projects/{project}/workspaces/{workspace_id}",
        scope="write",
        summary="Replace a workspace's name, sharing and panels",
        path_params=T.WorkspacePath,
        body=T.WorkspaceBody,
        responses={200: T.Workspace},
    )
    async def put_workspace(self, r: In) -> Response:
        b: T.WorkspaceBody = r.body
        row, p = await self._editable(r)
        spec = _check_spec(b.spec)
        if b.shared and not row["shared"]:
            need_project_write(r.request, row["project"])
        vals = {
            "name": clean_str(b.name, "name"),
            "shared": 1 if b.shared else 0,
            "spec": spec,
            "updated_at": self.store.clock(),
        }

        def save() -> None:
            with self.store.db.tx() as conn:
                conn.execute(
                    update(S.workspaces).where(S.workspaces.c.id == row["id"]).values(vals)
                )

        await run_in_threadpool(save)
        return json_response(await run_in_threadpool(self._full, {**row, **vals}, p))

    @endpoint(
        "DELETE",
        "/projects/{project}/workspaces/{workspace_id}",
        scope="write",
        summary="Delete a workspace",
        path_params=T.WorkspacePath,
        responses={200: T.WorkspaceRow},
    )
    async def delete_workspace(self, r: In) -> Response:
        row, p = await self._editable(r)

        def drop() -> None:
            with self.store.db.tx() as conn:
                conn.execute(delete(S.workspaces).where(S.workspaces.c.id == row["id"]))

        await run_in_threadpool(drop)
        names = await run_in_threadpool(
            self._owner_names, {row["owner_id"]} if row["owner_id"] is not None else set()
        )
        return json_response(self._row(row, p, names))
