"""HTTP endpoints of API v1 (docs/http-api.md is the user-facing description).

Each handler declares the scope it needs (the auth middleware, :mod:`._auth`, checks
identity and rights before routing); :func:`endpoint` turns :class:`Problem` into a JSON
error and handlers run blocking storage calls in the thread pool.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse

from wisp._protocol import MAX_KEY_LENGTH, MAX_NAME_LENGTH, MAX_SEQ, MAX_STEP
from wisp.server._auth import readable_projects
from wisp.server._blobs import BlobStore, open_blob_store
from wisp.server._filter import TREE_VERSION
from wisp.server._http import json_response, q_float, q_int, q_str, read_batch, read_json
from wisp.server._ingest import STATES, check_project, check_run_fields, prepare_records
from wisp.server._problem import Problem, check_id, clean_json, clean_str, invalid
from wisp.server._query import filter_tree, list_runs
from wisp.server._series import export_history, series
from wisp.server._settings import ServerSettings
from wisp.server._store import Store

__all__ = ["Api"]

_SHA = re.compile(r"([0-9a-f]{64})(\.[A-Za-z0-9]{1,10})?")
_RUN_BODY = {"project", "name", "tags", "notes", "group", "job_type", "config", "metadata"}
_RUN_BODY |= {"state", "created_at"}
Handler = Callable[[Request], Awaitable[Response]]


class Api:
    """The endpoints, bound to one store and settings."""

    def __init__(
        self, store: Store, settings: ServerSettings, blobs: BlobStore | None = None
    ) -> None:
        self.store = store
        self.settings = settings
        self.blobs: BlobStore = blobs if blobs is not None else open_blob_store(settings.media_dir)

    # -- plumbing -----------------------------------------------------------------------------

    def endpoint(self, scope: str, fn: Handler) -> Handler:
        async def handle(request: Request) -> Response:
            try:  # identity and rights: the auth middleware (_auth.py), before routing
                return await fn(request)
            except Problem as p:
                return json_response(p.body(), p.status)

        handle.__name__ = fn.__name__
        return handle

    def _run_id(self, request: Request) -> str:
        return check_id(request.path_params["run_id"], "run_id")

    async def _need_run(self, run_id: str) -> dict[str, Any]:
        run = await run_in_threadpool(self.store.get_run, run_id)
        if run is None:
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return run

    # -- ingestion ----------------------------------------------------------------------------

    async def put_run(self, request: Request) -> Response:
        run_id = self._run_id(request)
        body = await read_json(request, self.settings.max_body_bytes)
        if not isinstance(body, dict):
            raise invalid("body", "expected a JSON object")
        for k in body:
            if k not in _RUN_BODY:
                raise invalid(
                    str(k)[:100], f"unknown field: expected {', '.join(sorted(_RUN_BODY))}"
                )
        cols = check_run_fields(body, "")
        for src, col in (("config", "config"), ("metadata", "meta")):
            if body.get(src) is not None:
                if not isinstance(body[src], dict):
                    raise invalid(src, "expected an object")
                cols[col] = clean_json(body[src], src)
        if body.get("state") is not None:
            if body["state"] not in STATES:
                raise invalid("state", f"expected one of {', '.join(STATES)}")
            cols["state"] = body["state"]
        run = await run_in_threadpool(self.store.put_run, run_id, cols)
        return json_response({"run": run})

    async def post_records(self, request: Request) -> Response:
        run_id = self._run_id(request)
        body = await read_batch(request, self.settings.max_body_bytes)  # records left raw
        if not isinstance(body, dict):
            raise invalid("body", "expected a JSON object {writer_id, first_seq, records}")
        writer = check_id(body.get("writer_id"), "writer_id")
        first = body.get("first_seq")
        if type(first) is not int or not 0 <= first < MAX_SEQ:
            raise invalid("first_seq", "expected an integer >= 0")
        prepared = await run_in_threadpool(prepare_records, body.get("records"))
        acked = await run_in_threadpool(self.store.ingest, run_id, writer, first, prepared)
        return json_response({"acked_seq": acked})

    async def get_writer(self, request: Request) -> Response:
        run_id = self._run_id(request)
        writer = check_id(request.path_params["writer_id"], "writer_id")
        return json_response(
            {"acked_seq": await run_in_threadpool(self.store.acked_seq, run_id, writer)}
        )

    async def heartbeat(self, request: Request) -> Response:
        run_id = self._run_id(request)
        if not await run_in_threadpool(self.store.heartbeat, run_id):
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return json_response({"ok": True})

    # -- media --------------------------------------------------------------------------------

    def _sha(self, request: Request) -> tuple[str, str]:
        m = _SHA.fullmatch(request.path_params["sha256"])
        if m is None:
            raise invalid("sha256", "expected 64 lowercase hex digits, optionally with .suffix")
        return m.group(1), m.group(2) or ""

    async def head_media(self, request: Request) -> Response:
        sha, _ = self._sha(request)
        known = await run_in_threadpool(self.store.media_known, sha)
        if known is None or not await run_in_threadpool(self.blobs.exists, sha):
            return Response(status_code=404)
        ctype = mimetypes.guess_type("x" + (known["suffix"] or ""))[0] or "application/octet-stream"
        headers = {"content-length": str(known["size"]), "content-type": ctype}
        return Response(status_code=200, headers=headers)

    async def put_media(self, request: Request) -> Response:
        sha, suffix = self._sha(request)
        if await run_in_threadpool(self.store.media_known, sha) is not None and (
            await run_in_threadpool(self.blobs.exists, sha)
        ):
            return json_response({"sha256": sha, "stored": False}, 200)
        if request.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
            raise Problem(415, "unsupported_encoding", "media bodies are sent as raw bytes")
        limit = self.settings.max_media_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise Problem(413, "too_large", f"media larger than {limit} bytes")
        with self.blobs.writer(sha, limit) as blob:  # 413 past the limit, 422 on a wrong hash
            async for chunk in request.stream():
                blob.write(chunk)
            size = blob.commit()
        await run_in_threadpool(self.store.media_add, sha, size, suffix)
        return json_response({"sha256": sha, "stored": True}, 201)

    async def get_media(self, request: Request) -> Response:
        sha, suffix = self._sha(request)
        known = await run_in_threadpool(self.store.media_known, sha)
        head = await run_in_threadpool(self.blobs.head, sha)
        if known is None or head is None:
            raise Problem(404, "media_not_found", f"no media {sha}", "sha256")
        ctype = mimetypes.guess_type("x" + (known["suffix"] or suffix))[0]
        ctype = ctype or head.content_type or "application/octet-stream"
        path = await run_in_threadpool(self.blobs.local_path, sha)
        if path is not None:
            return FileResponse(path, media_type=ctype)
        headers = {"content-length": str(head.size)}
        return StreamingResponse(self.blobs.iter_bytes(sha), media_type=ctype, headers=headers)

    # -- queries ------------------------------------------------------------------------------

    async def projects(self, request: Request) -> Response:
        readable = readable_projects(request)  # the caller's visibility (the auth middleware)
        return json_response({"projects": await run_in_threadpool(self.store.projects, readable)})

    async def project_runs(self, request: Request) -> Response:
        project = check_project(request.path_params["project"], "project")
        order = q_str(request, "order", "desc")
        if order not in ("asc", "desc"):
            raise invalid("order", "expected asc or desc")
        kw: dict[str, Any] = {
            "filter_expr": q_str(request, "filter", ""),
            "sort": q_str(request, "sort", "created_at", 1000),
            "order": order,
            "limit": q_int(request, "limit", 50, 1, 1000),
            "offset": q_int(request, "offset", 0, 0, 1_000_000_000),
            "group": q_str(request, "group", None, MAX_NAME_LENGTH),
        }
        if kw["group"] is not None:
            clean_str(kw["group"], "group")
        out = await run_in_threadpool(lambda: list_runs(self.store, project, **kw))
        return json_response(out)

    async def filter_parse(self, request: Request) -> Response:
        src = q_str(request, "filter", "")
        tree = filter_tree(self.store, src)
        return json_response({"filter": src, "version": TREE_VERSION, "tree": tree})

    async def get_run(self, request: Request) -> Response:
        return json_response(await self._need_run(self._run_id(request)))

    async def series(self, request: Request) -> Response:
        runs_s = q_str(request, "runs")
        keys_s = q_str(request, "keys", None, 100_000)
        if not runs_s:
            raise invalid("runs", "required: comma-separated run ids")
        if not keys_s:
            raise invalid("keys", "required: comma-separated metric keys")
        runs = [check_id(r, "runs") for r in runs_s.split(",")]
        keys = [clean_str(k, "keys", MAX_KEY_LENGTH) for k in keys_s.split(",") if k]
        if len(runs) > 200 or len(keys) > 500 or len(runs) * len(keys) > 2000:
            raise invalid("runs", "at most 200 runs, 500 keys and 2000 series per request")
        x = clean_str(q_str(request, "x", "step", MAX_KEY_LENGTH), "x")
        kw: dict[str, Any] = {
            "x": x,
            "lo": q_float(request, "min"),
            "hi": q_float(request, "max"),
            "after": q_float(request, "after"),
            "buckets": q_int(request, "buckets", 1000, 1, 100_000),
        }
        out = await run_in_threadpool(lambda: series(self.store, runs, keys, **kw))
        return json_response({"series": out})

    async def history(self, request: Request) -> Response:
        run_id = self._run_id(request)
        fmt = q_str(request, "format", "jsonl")
        if fmt not in ("csv", "jsonl"):
            raise invalid("format", "expected csv or jsonl")
        keys_s = q_str(request, "keys", None, 100_000)
        keys = (
            [clean_str(k, "keys", MAX_KEY_LENGTH) for k in keys_s.split(",") if k]
            if keys_s
            else None
        )
        await self._need_run(run_id)
        it = export_history(self.store, run_id, fmt, keys)
        ctype = "text/csv" if fmt == "csv" else "application/x-ndjson"
        disp = f'attachment; filename="{run_id}-history.{fmt}"'
        return StreamingResponse(it, media_type=ctype, headers={"content-disposition": disp})

    async def media_list(self, request: Request) -> Response:
        run_id = self._run_id(request)
        key = q_str(request, "key", None, MAX_KEY_LENGTH)
        if key is not None:
            clean_str(key, "key")
        limit = q_int(request, "limit", 10_000, 1, 100_000)
        await self._need_run(run_id)
        items = await run_in_threadpool(self.store.media_items, run_id, key, limit)
        return json_response({"media": items})

    async def console(self, request: Request) -> Response:
        run_id = self._run_id(request)
        after = q_int(request, "after", -1, -1, MAX_STEP)
        limit = q_int(request, "limit", 1000, 1, 10_000)
        await self._need_run(run_id)
        lines = await run_in_threadpool(self.store.console_lines, run_id, after, limit)
        return json_response({"lines": lines})
