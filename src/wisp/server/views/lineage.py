"""``GET /runs/{run_id}/lineage``: a run's parent, its forks and what rewinds set aside.

Forks and rewinds are made by the SDK (``wisp.init(fork_from=...)``, ``resume_from=...``,
docs/fork.md); the server notes them while ingesting (``store.lineage``) and reads a fork
through its parents.  The caller must read the run (``http.auth.RULES``); forks in projects
it may not read are left out.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import principal_of
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import lineage as T
from wisp.server.schemas.runs import RunPath
from wisp.server.settings import ServerSettings
from wisp.server.store import lineage
from wisp.server.store.facade import Store

__all__ = ["LineageApi"]


class LineageApi:
    """The handler of this module."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store

    def _lineage(self, run_id: str, readable: Any) -> dict[str, Any] | None:
        with self.store.engine.connect() as conn:
            return lineage.describe(conn, run_id, readable)

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
        got = await run_in_threadpool(self._lineage, run_id, readable)
        if got is None:
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return json_response(got)
