"""The ASGI application factory: ``create_app(settings)`` -> Starlette app."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from wisp.server.blobs import open_blob_store
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import AuthMiddleware
from wisp.server.http.body import json_response
from wisp.server.http.openapi import api_classes, openapi_bytes
from wisp.server.http.routes import bind, endpoints
from wisp.server.http.timing import server_timing
from wisp.server.ingesting import IngestPool
from wisp.server.readfirst import ReadFirst
from wisp.server.settings import ServerSettings
from wisp.server.store.facade import Store, open_store
from wisp.server.views.mcp import mcp_route
from wisp.server.views.runs import Api

__all__ = ["create_app"]

_NO_UI = """<!doctype html><html><head><meta charset="utf-8"><title>wisp server</title></head>
<body><h1>wisp server</h1><p>The dashboard UI is not built into this install.
The HTTP API is at <a href="/api/openapi.json">/api/openapi.json</a>.</p></body></html>"""


def create_app(
    settings: ServerSettings | None = None,
    *,
    store: Store | None = None,
    blobs: BlobStore | None = None,
) -> Any:
    """Build the app: API under ``/api/v1``, OpenAPI at ``/api/openapi.json``, UI at ``/``.

    ``store`` (the database) and ``blobs`` (media bytes) default to the ones named by
    ``settings.db`` and ``settings.media_dir`` (a directory or ``file:///path``).
    """
    settings = (settings or ServerSettings()).resolved()
    if store is None:
        store = open_store(
            settings.db,
            heartbeat_timeout=settings.heartbeat_timeout,
            run_migrations=settings.migrate,
        )
    blobs = blobs if blobs is not None else open_blob_store(settings.media_dir)
    reads = ReadFirst()  # ingest gives way to reads in flight (wisp.server.readfirst)
    ingest = None  # record batches applied apart from the reads (wisp.server.ingesting)
    if settings.ingest_processes:
        n = settings.ingest_processes
        hb = settings.heartbeat_timeout
        ingest = IngestPool(settings.db, n, heartbeat_timeout=hb, reads=reads)
    api = Api(store, settings, blobs, reads=reads, ingest=ingest)
    routes = []
    for cls in api_classes():  # every handler class takes (store, settings, blobs)
        obj = api if cls is Api else cls(store, settings, blobs)
        routes += [Route(e.full_path, bind(e, obj), methods=[e.method]) for e in endpoints(cls)]
    app_ref: list[Any] = []
    mcp, mcp_lifespan = mcp_route(lambda: app_ref[0], settings.mcp_max_bytes)
    routes.append(mcp)
    routes += [
        Route("/api/{rest:path}", _api_not_found),
        Route("/{path:path}", _static_handler(Path(settings.static_dir)), methods=["GET", "HEAD"]),
    ]
    openapi_bytes()  # generated once, at startup: a bad declaration fails here
    auth = Middleware(AuthMiddleware, store=store, settings=settings)  # who may do what
    app = Starlette(
        routes=routes,
        middleware=[Middleware(server_timing), Middleware(reads.middleware), auth],
        lifespan=_lifespan(store, settings, mcp_lifespan, ingest),
    )
    app_ref.append(app)
    app.state.store = store
    app.state.settings = settings
    return app


def _lifespan(store: Store, settings: ServerSettings, mcp: Any, ingest: IngestPool | None) -> Any:
    """While the app serves: the automations worker (run health, triggers, webhooks), the
    task group in which ``/mcp`` starts the MCP SDK on first use (``mcp``) and the ingest
    processes, if any."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        from wisp.server.automations.secrets import Sealer, encrypt_plain
        from wisp.server.automations.worker import AutomationWorker

        sealer = Sealer(settings.secrets_key_file)
        await run_in_threadpool(encrypt_plain, store, sealer)
        worker = AutomationWorker(store, settings, sealer)
        worker.start()
        if ingest is not None:
            ingest.start()
        try:
            async with mcp(app):
                yield
        finally:
            worker.stop()
            if ingest is not None:
                await run_in_threadpool(ingest.close)

    return lifespan


async def _api_not_found(request: Request) -> Response:
    body = {"error": {"code": "not_found", "message": f"no endpoint {request.url.path}"}}
    return json_response(body, 404)


def _static_handler(root: Path) -> Any:
    async def static(request: Request) -> Response:
        index = root / "index.html"
        if not index.is_file():
            if request.path_params["path"] in ("", "index.html"):
                return HTMLResponse(_NO_UI)
            return HTMLResponse(_NO_UI, status_code=404)
        base = root.resolve()
        rel = request.path_params["path"]
        target = (base / rel).resolve()
        if rel and base in target.parents and target.is_file():
            return FileResponse(target)
        return FileResponse(index, media_type="text/html")

    return static
