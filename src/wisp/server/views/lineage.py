"""``GET /runs/{run_id}/lineage``: a run's parent, its forks and what rewinds set aside.

Forks and rewinds are made by the SDK (``wisp.init(fork_from=...)``, ``resume_from=...``,
docs/fork.md); the server notes them while ingesting (``store.lineage``) and reads a fork
through its parents.  The caller must read the run (``http.auth.RULES``); forks in projects
it may not read are left out.  What a rewind set aside is read back as JSON lines
(``GET /runs/{run_id}/set-aside/{rewind}/history``, ``Run.scan_set_aside()``) and a
project's forks are listed for the runs table (``GET /projects/{project}/forks``).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import principal_of
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import lineage as T
from wisp.server.schemas.runs import ProjectRunsPath, RunPath
from wisp.server.series.history import export_history
from wisp.server.settings import ServerSettings
from wisp.server.store import lineage
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_project

__all__ = ["LineageApi"]


class LineageApi:
    """The handler of this module."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store

    def _read(self, fn: Any, *args: Any) -> Any:
        """``fn(conn, *args)`` on a read connection (in the thread pool)."""
        with self.store.engine.connect() as conn:
            return fn(conn, *args)

    @endpoint(
        "GET",
        "/runs/{run_id}/lineage",
        scope="read",
        summary="A run's parent (fork_from), its forks and the rows rewinds set aside",
        path_params=RunPath,
        responses={200: T.RunLineage},
    )
    async def run_lineage(self, r: In) -> Response:
        run_id = r.path.run_id
        readable = await run_in_threadpool(self.store.access.readable, principal_of(r.request))
        got = await run_in_threadpool(self._read, lineage.describe, run_id, readable)
        if got is None:
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return json_response(got)

    def _restore(self, run_id: str, rewind: int) -> str | None:
        with self.store.db.tx() as conn:
            return lineage.restore(conn, self.store.runs, run_id, rewind, self.store.db.clock())

    @endpoint(
        "POST",
        "/runs/{run_id}/set-aside/{rewind}/restore",
        scope="write",
        summary="Make what a rewind set aside a run of its own (a fork at the rewind's step)",
        path_params=T.RestorePath,
        responses={200: T.Restored},
    )
    async def restore_set_aside(self, r: In) -> Response:
        p: T.RestorePath = r.path
        key = await run_in_threadpool(self._restore, p.run_id, int(p.rewind))
        if key is None:
            raise Problem(404, "not_found", f"run {p.run_id!r} has no rewind {p.rewind}", "rewind")
        run = await run_in_threadpool(self.store.get_run, key)
        return json_response({"key": key, "id": (run or {}).get("id", key)})

    @endpoint(
        "GET",
        "/runs/{run_id}/set-aside/{rewind}/history",
        scope="read",
        summary="The rows a rewind set aside, as JSON lines (_step, _timestamp, values)",
        path_params=T.RestorePath,
        responses={200: {"application/x-ndjson": {"type": "string"}}},
    )
    async def set_aside_history(self, r: In) -> Response:
        p: T.RestorePath = r.path
        if await run_in_threadpool(self.store.get_run, p.run_id) is None:
            raise Problem(404, "run_not_found", f"no run {p.run_id!r}", "run_id")
        shadow = await run_in_threadpool(self._read, lineage.shadow_of, p.run_id, int(p.rewind))
        if shadow is None:
            raise Problem(404, "not_found", f"run {p.run_id!r} has no rewind {p.rewind}", "rewind")
        it = export_history(self.store, shadow, "jsonl", None)
        return StreamingResponse(it, media_type="application/x-ndjson")

    @endpoint(
        "GET",
        "/projects/{project}/forks",
        scope="read",
        summary="The project's runs forked from a run on this server: key, parent key, step",
        path_params=ProjectRunsPath,
        responses={200: T.ProjectForks},
    )
    async def project_forks(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        readable = await run_in_threadpool(self.store.access.readable, principal_of(r.request))
        forks = await run_in_threadpool(self._read, lineage.project_forks, project, readable)
        return json_response({"forks": forks})
