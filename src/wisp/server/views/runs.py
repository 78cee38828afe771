"""HTTP endpoints of API v1: runs, ingestion, media, series.

Shapes: :mod:`wisp.server.schemas.runs`; prose: docs/http-api.md.

Each handler declares its method, path, scope and types once with
:func:`~wisp.server.http.routes.endpoint`; the wrapper decodes the request through the
declared types and turns :class:`Problem` into a JSON error. Who may call what is
decided before routing, in one place: the auth middleware (:mod:`wisp.server.http.auth`, rules in
:mod:`wisp.server.rights.matrix`). Blocking storage calls run in the thread pool.
"""

from __future__ import annotations

import asyncio
import math
import mimetypes
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse, Response, StreamingResponse

from wisp._protocol import MAX_KEY_LENGTH
from wisp.server.blobs import open_blob_store
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import media_inline, principal_of, readable_projects
from wisp.server.http.body import (
    check_possession,
    json_response,
    presigned_redirect,
    proven,
    read_encoded,
    require_raw,
    stream_blob,
)
from wisp.server.http.problem import Problem, check_id, clean_str, invalid
from wisp.server.http.routes import RAW, In, endpoint
from wisp.server.ingesting import IngestPool, apply_batch
from wisp.server.query.filter import TREE_VERSION
from wisp.server.query.runs import filter_tree, list_runs
from wisp.server.readfirst import ReadFirst
from wisp.server.rights.matrix import ACTOR
from wisp.server.schemas import runs as T
from wisp.server.series.buckets import series_json
from wisp.server.series.history import export_history
from wisp.server.settings import ServerSettings
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_project, run_put_cols

__all__ = ["Api"]

#: Sent with every media file: ``sandbox`` (without allow-same-origin) gives logged HTML an
#: opaque origin; its scripts may run but reach nothing outside the document itself.
MEDIA_CSP = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data: blob:; media-src data: blob:; font-src data:"
)
_NO_BODY = None
_MEDIA_BYTES: dict[str, Any] = {"*/*": {}}
_HISTORY = {"text/csv": {"type": "string"}, "application/x-ndjson": {"type": "string"}}


class Api:
    """The endpoints, bound to one store and settings."""

    def __init__(
        self,
        store: Store,
        settings: ServerSettings,
        blobs: BlobStore | None = None,
        *,
        reads: ReadFirst | None = None,
        ingest: IngestPool | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.reads = reads if reads is not None else ReadFirst()
        self.ingest = ingest  # None: batches are applied on this process's threads
        self.blobs: BlobStore = blobs if blobs is not None else open_blob_store(settings.media_dir)
        self._ingesting: asyncio.Semaphore | None = None

    # -- plumbing -----------------------------------------------------------------------------

    async def _need_run(self, run_id: str) -> dict[str, Any]:
        run = await run_in_threadpool(self.store.get_run, run_id)
        if run is None:
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return run

    # -- ingestion ----------------------------------------------------------------------------

    @endpoint(
        "PUT",
        "/runs/{run_id}",
        scope="write",
        summary="Create or update a run (idempotent upsert)",
        path_params=T.RunPath,
        body=T.RunBody,
        responses={200: T.RunPut},
    )
    async def put_run(self, r: In) -> Response:
        cols, by_project = run_put_cols(r.raw)
        run = await run_in_threadpool(self.store.put_run, r.path.run_id, cols, by_project)
        writers = await run_in_threadpool(self.store.writers, run["key"])
        return json_response({"run": run, "writers": writers})

    @endpoint(
        "POST",
        "/runs/{run_id}/records",
        scope="write",
        summary="Append a batch of run-file records exactly once",
        path_params=T.RunPath,
        body=T.RecordsBody,
        responses={200: T.Ack, 409: T.SeqConflict},
        reader=read_encoded,  # the batch as sent, decoded off the event loop (apply_batch)
    )
    async def post_records(self, r: In) -> Response:
        if self._ingesting is None:  # made on the event loop that uses it
            self._ingesting = asyncio.Semaphore(self.settings.ingest_concurrency or 1 << 30)
        reads = self.reads  # reads in flight go first (wisp.server.readfirst)
        async with self._ingesting:  # many uploaders at once would starve reads of the GIL
            await reads.quiet()
            if self.ingest is not None:  # in an ingest process (wisp.server.ingesting)
                acked = await self.ingest.apply(r.path.run_id, r.raw, ACTOR.get())
            else:  # on a worker thread, the same steps
                pause = reads.pauser()
                acked = await run_in_threadpool(
                    apply_batch, self.store, r.path.run_id, r.raw, pause
                )
        if await run_in_threadpool(self.store.stops.requested, r.path.run_id):
            return json_response({"acked_seq": acked, "stop": True})
        return json_response({"acked_seq": acked})

    @endpoint(
        "GET",
        "/runs/{run_id}/writers/{writer_id}",
        scope="read",
        summary="Acknowledged sequence of a writer (-1 if unknown)",
        path_params=T.WriterPath,
        responses={200: T.Ack},
    )
    async def get_writer(self, r: In) -> Response:
        p: T.WriterPath = r.path
        acked = await run_in_threadpool(self.store.acked_seq, p.run_id, p.writer_id)
        return json_response({"acked_seq": acked})

    @endpoint(
        "POST",
        "/runs/{run_id}/heartbeat",
        scope="write",
        summary="Mark a run as alive (the answer says whether it was asked to stop)",
        path_params=T.RunPath,
        responses={200: T.Alive},
    )
    async def heartbeat(self, r: In) -> Response:
        run_id = r.path.run_id
        if not await run_in_threadpool(self.store.heartbeat, run_id):
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        stop = await run_in_threadpool(self.store.stops.requested, run_id)
        return json_response({"ok": True, "stop": stop})

    @endpoint(
        "POST",
        "/runs/{run_id}/stop",
        scope="write",
        summary="Ask a live run's process to finish (its owner or a project admin)",
        path_params=T.RunPath,
        responses={200: T.Alive},
    )
    async def stop(self, r: In) -> Response:
        run = await self._need_run(r.path.run_id)
        if run.get("state") != "running":
            raise Problem(
                409, "run_not_running", f"run {r.path.run_id!r} is {run.get('state')}", "run_id"
            )
        user_id = principal_of(r.request).user_id
        await run_in_threadpool(self.store.stops.request, str(run["key"]), user_id)
        return json_response({"ok": True, "stop": True})

    # -- media --------------------------------------------------------------------------------

    @staticmethod
    def _sha(p: T.MediaPath) -> tuple[str, str]:
        sha, dot, suffix = p.sha256.partition(".")
        return sha, dot + suffix

    @endpoint(
        "HEAD",
        "/media/{sha256}",
        scope="read",
        summary="Is this media file stored?",
        path_params=T.MediaPath,
        responses={200: _NO_BODY, 404: _NO_BODY},
    )
    async def head_media(self, r: In) -> Response:
        sha, _ = self._sha(r.path)
        known = await run_in_threadpool(self.store.media_known, sha)
        if known is None or not await run_in_threadpool(self.blobs.exists, sha):
            return Response(status_code=404)
        ctype = mimetypes.guess_type("x" + (known["suffix"] or ""))[0] or "application/octet-stream"
        headers = {"content-length": str(known["size"]), "content-type": ctype}
        return Response(status_code=200, headers=headers)

    @endpoint(
        "GET",
        "/media/{sha256}",
        scope="read",
        summary="Media file bytes",
        path_params=T.MediaPath,
        responses={200: _MEDIA_BYTES, 307: _NO_BODY},
    )
    async def get_media(self, r: In) -> Response:
        sha, suffix = self._sha(r.path)
        known = await run_in_threadpool(self.store.media_known, sha)
        head = await run_in_threadpool(self.blobs.head, sha)
        if known is None or head is None:
            raise Problem(404, "media_not_found", f"no media {sha}", "sha256")
        ctype = mimetypes.guess_type("x" + (known["suffix"] or suffix))[0]
        ctype = ctype or head.content_type or "application/octet-stream"
        # An object store serves images, audio and video itself, inline, and anything else
        # as an attachment; HTML needs the sandboxing CSP below, so it comes from here.
        moved = None
        if not ctype.startswith("text/html"):
            inline = media_inline(ctype)
            moved = await presigned_redirect(
                self.blobs,
                r.request,
                sha,
                ctype if inline else "application/octet-stream",
                "inline" if inline else "attachment",
            )
        if moved is not None:
            return moved
        # Logged HTML (and any file a URL suffix makes a browser render) runs sandboxed: an
        # opaque origin that cannot read the dashboard's storage or call its API.
        headers = {"content-security-policy": MEDIA_CSP, "x-content-type-options": "nosniff"}
        path = await run_in_threadpool(self.blobs.local_path, sha)
        if path is not None:
            return FileResponse(path, media_type=ctype, headers=headers)
        headers["content-length"] = str(head.size)
        return StreamingResponse(self.blobs.iter_bytes(sha), media_type=ctype, headers=headers)

    @endpoint(
        "PUT",
        "/media/{sha256}",
        scope="write",
        summary="Upload a media file by its sha256",
        path_params=T.MediaPath,
        body=RAW,
        body_content="application/octet-stream",
        responses={200: T.MediaStored, 201: T.MediaStored},
    )
    async def put_media(self, r: In) -> Response:
        sha, suffix = self._sha(r.path)
        request = r.request
        require_raw(request, "media bodies")
        limit = self.settings.max_media_bytes
        if await run_in_threadpool(self.store.media_known, sha) is not None and (
            await run_in_threadpool(self.blobs.exists, sha)
        ):
            await check_possession(request, sha, limit)
            return json_response({"sha256": sha, "stored": False}, 200)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise Problem(413, "too_large", f"media larger than {limit} bytes")
        size = await stream_blob(request, self.blobs, sha, limit)
        await run_in_threadpool(self.store.media_add, sha, size, suffix)
        proven(request, sha)
        return json_response({"sha256": sha, "stored": True}, 201)

    # -- queries ------------------------------------------------------------------------------

    @endpoint(
        "GET",
        "/projects",
        scope="read",
        summary="Projects with run counts (and the folders `wisp ui` follows)",
        responses={200: T.ProjectList},
    )
    async def projects(self, r: In) -> Response:
        readable = readable_projects(r.request)  # the caller's visibility (auth middleware)
        projects = await run_in_threadpool(self.store.projects, readable)
        if self.settings.ui_folders:  # `wisp ui`: where its runs come from
            return json_response({"projects": projects, "folders": self.settings.ui_folders})
        return json_response({"projects": projects})

    @endpoint(
        "GET",
        "/projects/{project}/runs",
        scope="read",
        summary="Runs of a project, filtered, sorted and paginated on the server",
        path_params=T.ProjectRunsPath,
        query=T.RunsQuery,
        responses={200: T.RunsPage},
    )
    async def project_runs(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        q: T.RunsQuery = r.query
        for name in ("filter", "sort", "group"):
            if getattr(q, name) is not None:
                clean_str(getattr(q, name), name)
        kw: dict[str, Any] = {
            "filter_expr": q.filter,
            "sort": q.sort,
            "order": q.order,
            "limit": q.limit,
            "offset": q.offset,
            "group": q.group,
        }
        out = await run_in_threadpool(lambda: list_runs(self.store, project, **kw))
        return json_response(out)

    @endpoint(
        "GET",
        "/filter/parse",
        scope="read",
        summary="A runs filter parsed to its expression tree (the dashboard evaluates it)",
        query=T.FilterQuery,
        responses={200: T.FilterParsed},
    )
    async def filter_parse(self, r: In) -> Response:
        src = clean_str(r.query.filter, "filter")
        tree = filter_tree(self.store, src)
        return json_response({"filter": src, "version": TREE_VERSION, "tree": tree})

    @endpoint(
        "GET",
        "/runs/{run_id}",
        scope="read",
        summary="One run with metadata and metric keys",
        path_params=T.RunPath,
        responses={200: T.RunDetail},
    )
    async def get_run(self, r: In) -> Response:
        return json_response(await self._need_run(r.path.run_id))

    @endpoint(
        "GET",
        "/projects/{project}/runs/{run_id}",
        scope="read",
        summary="One run by its project and id (ids are unique per project; `key` addresses it)",
        path_params=T.ProjectRunPath,
        responses={200: T.RunDetail},
    )
    async def get_project_run(self, r: In) -> Response:
        p: T.ProjectRunPath = r.path
        project = check_project(p.project, "project")
        key = await run_in_threadpool(self.store.runs.key_of, project, p.run_id)
        if key is None:
            raise Problem(404, "run_not_found", f"no run {p.run_id!r} in {project!r}", "run_id")
        return json_response(await self._need_run(key))

    @endpoint(
        "GET",
        "/series",
        scope="read",
        summary="Metric series, downsampled to at most `buckets` buckets",
        query=T.SeriesQuery,
        responses={200: T.SeriesList},
    )
    async def series(self, r: In) -> Response:
        q: T.SeriesQuery = r.query
        if not q.runs:
            raise invalid("runs", "required: comma-separated run ids")
        if not q.keys:
            raise invalid("keys", "required: comma-separated metric keys")
        runs = [check_id(x, "runs") for x in q.runs.split(",")]
        keys = [clean_str(k, "keys", MAX_KEY_LENGTH) for k in q.keys.split(",") if k]
        if len(runs) > 200 or len(keys) > 500 or len(runs) * len(keys) > 2000:
            raise invalid("runs", "at most 200 runs, 500 keys and 2000 series per request")
        for name in ("min", "max", "after"):
            v = getattr(q, name)
            if v is not None and not math.isfinite(v):
                raise invalid(name, "expected a finite number")
        kw: dict[str, Any] = {
            "x": clean_str(q.x, "x"),
            "lo": q.min,
            "hi": q.max,
            "after": q.after,
            "buckets": q.buckets,
        }
        body = await run_in_threadpool(lambda: series_json(self.store, runs, keys, **kw))
        return Response(body, media_type="application/json")

    @endpoint(
        "GET",
        "/runs/{run_id}/history",
        scope="read",
        summary="Full history rows, streamed as CSV or JSON lines",
        path_params=T.RunPath,
        query=T.HistoryQuery,
        responses={200: _HISTORY},
    )
    async def history(self, r: In) -> Response:
        run_id = r.path.run_id
        q: T.HistoryQuery = r.query
        keys = (
            [clean_str(k, "keys", MAX_KEY_LENGTH) for k in q.keys.split(",") if k]
            if q.keys
            else None
        )
        await self._need_run(run_id)
        it = export_history(self.store, run_id, q.format, keys)
        ctype = "text/csv" if q.format == "csv" else "application/x-ndjson"
        disp = f'attachment; filename="{run_id}-history.{q.format}"'
        return StreamingResponse(it, media_type=ctype, headers={"content-disposition": disp})

    @endpoint(
        "GET",
        "/runs/{run_id}/media",
        scope="read",
        summary="Typed values (images, histograms, ...) logged in a run",
        path_params=T.RunPath,
        query=T.MediaListQuery,
        responses={200: T.MediaList},
    )
    async def media_list(self, r: In) -> Response:
        run_id = r.path.run_id
        q: T.MediaListQuery = r.query
        if q.key is not None:
            clean_str(q.key, "key")
        await self._need_run(run_id)
        items = await run_in_threadpool(self.store.media_items, run_id, q.key, q.limit)
        return json_response({"media": items})

    @endpoint(
        "GET",
        "/runs/{run_id}/console",
        scope="read",
        summary="Captured console lines after an id",
        path_params=T.RunPath,
        query=T.ConsoleQuery,
        responses={200: T.ConsolePage},
    )
    async def console(self, r: In) -> Response:
        run_id = r.path.run_id
        q: T.ConsoleQuery = r.query
        await self._need_run(run_id)
        lines = await run_in_threadpool(self.store.console_lines, run_id, q.after, q.limit)
        return json_response({"lines": lines})
