"""Bulk reads and run edits for ``wisp.Api()``: history export, PATCH/DELETE run, files.

``POST /api/v1/export/histories`` streams the numeric histories of many runs as one long
table, columns ``run_id``, ``step``, then one float column per key (format version 1):

- ``format: "arrow"`` — an Arrow IPC *stream* (``application/vnd.apache.arrow.stream``),
  record batches with ``lz4`` buffer compression; an absent value is null, a logged NaN/inf
  is that float.  Needs pyarrow on the server (``pip install 'wisp-tracker[export]'``); without it
  the answer is a 422 naming the fix and clients fall back to JSON lines (which needs
  numpy on the server, also in that extra).
- ``format: "jsonl"`` — one object per (run, step): ``{"run_id", "step", key: value...}``,
  absent keys left out, ``NaN``/``Infinity``/``-Infinity`` tokens; gzip-compressed when the
  request accepts it.

Memory stays bounded: runs are read one at a time, each in windows of steps holding about
``page_points`` points, and each window is encoded and sent before the next is read
(uvicorn applies back-pressure while the client is slower than the database).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterator
from typing import Any

import msgspec
from sqlalchemy import func, select
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from wisp._protocol import MAX_KEY_LENGTH, MAX_NAME_LENGTH, MAX_NOTES_LENGTH, MAX_STEP
from wisp.errors import install_hint
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import need_runs_read
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem, check_id, clean_json, clean_str, invalid
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import runs as T
from wisp.server.settings import ServerSettings
from wisp.server.store import schema as S
from wisp.server.store.edit import delete_run, edit_run, run_files
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_tags

__all__ = ["EXPORT_VERSION", "ExportApi", "ExportRequest", "RunEdit"]

EXPORT_VERSION = 1
MAX_EXPORT_RUNS = 1000
MAX_EXPORT_KEYS = 2000
_NFV = {1: math.nan, 2: math.inf, 3: -math.inf}
ARROW_TYPE = "application/vnd.apache.arrow.stream"
_EXPORT_BODIES = {
    ARROW_TYPE: {"type": "string", "format": "binary"},
    "application/x-ndjson": {"type": "string"},
}


class RunEdit(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """``PATCH /runs/{id}`` body: the fields to set (``summary`` replaces the whole summary)."""

    name: str | None = None
    tags: list[str] | None = None
    notes: str | None = None
    summary: dict[str, Any] | None = None


class ExportRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /export/histories`` body."""

    runs: list[str]
    keys: list[str] | None = None
    format: str = "arrow"
    min_step: int | None = None
    max_step: int | None = None
    page_points: int = 250_000


class RunFile(msgspec.Struct):
    name: str
    size: int | None
    sha256: str | None
    kind: str


class RunFiles(msgspec.Struct):
    files: list[RunFile]


class Deleted(msgspec.Struct):
    deleted: str


# -- history windows ------------------------------------------------------------------------


_GROUP_RUNS = 200  # small runs read by one query at most
_IN_CHUNK = 5000  # ids per IN list (SQLite's bound-parameter limit is 32766)


def _chunks(xs: list[Any]) -> Iterator[list[Any]]:
    for i in range(0, len(xs), _IN_CHUNK):
        yield xs[i : i + _IN_CHUNK]


def _run_keys(conn: Any, runs: list[str], keys: list[str]) -> dict[str, dict[int, int]]:
    """run -> {key id: column} for the asked keys, in one query per chunk of runs."""
    mk = S.metric_keys.c
    col = {k: i for i, k in enumerate(keys)}
    out: dict[str, dict[int, int]] = {}
    for part in _chunks(runs):
        q = select(mk.run_id, mk.key, mk.id).where(mk.run_id.in_(part))
        for run_id, key, kid in conn.execute(q):
            if key in col:
                out.setdefault(run_id, {})[kid] = col[key]
    return out


def _extents(conn: Any, ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """key id -> (first step, last step, points), from the ``chunks`` rows' aggregates."""
    ch = S.chunks.c
    out: dict[int, tuple[int, int, int]] = {}
    for part in _chunks(ids):
        q = (
            select(ch.key_id, func.min(ch.s0), func.max(ch.s1), func.sum(ch.n))
            .where(ch.key_id.in_(part))
            .group_by(ch.key_id)
        )
        for kid, lo, hi, n in conn.execute(q):
            out[kid] = (int(lo), int(hi), int(n))
    return out


def _segments(kid: Any) -> dict[int, tuple[int, int]] | None:
    """key id -> (start, end) of its points in ``kid`` (points come grouped by key, in key
    order); None if a key's points are not contiguous."""
    import numpy as np

    if not len(kid):
        return {}
    cuts = np.flatnonzero(kid[1:] != kid[:-1]) + 1
    starts = np.concatenate(([0], cuts)).tolist()
    ends = [*starts[1:], len(kid)]
    keys = kid[starts].tolist()
    out = {k: (a, b) for k, a, b in zip(keys, starts, ends, strict=True)}
    return out if len(out) == len(keys) else None


def _pivot(
    step: Any, val: Any, segs: list[tuple[int, int, int]], ncols: int
) -> tuple[Any, list[tuple[Any, Any]]] | None:
    """(steps, [(values, present) per key column]) of one run's points.

    ``segs`` are (column, start, end) slices of ``step``/``val``, each one key's points in
    step order.  A column of a key the run lacks is ``(None, None)``; ``present`` is None
    when every step has a value.  When the keys share their steps (a run logging all its
    keys at every step) the slices are the columns as they are: no sort, no scatter.
    """
    import numpy as np

    segs = [x for x in segs if x[2] > x[1]]
    if not segs:
        return None
    cols: list[tuple[Any, Any]] = [(None, None)] * ncols
    _, a0, b0 = segs[0]
    first = step[a0:b0]
    if all(b - a == b0 - a0 and np.array_equal(step[a:b], first) for _, a, b in segs[1:]):
        for col, a, b in segs:
            cols[col] = (val[a:b], None)
        return first, cols
    steps = np.unique(np.concatenate([step[a:b] for _, a, b in segs]))
    for col, a, b in segs:
        pos = np.searchsorted(steps, step[a:b])
        values = np.zeros(len(steps), dtype=np.float64)
        present = np.zeros(len(steps), dtype=bool)
        values[pos] = val[a:b]
        present[pos] = True
        cols[col] = (values, present)
    return steps, cols


def _split(
    arrays: tuple[Any, Any, Any], group: list[tuple[str, dict[int, int]]], ncols: int
) -> Iterator[tuple[str, Any, list[tuple[Any, Any]]]]:
    """The runs of ``group`` (run id, {key id: column}) pivoted from points read together."""
    import numpy as np

    kid, step, val = arrays
    seg = _segments(kid)
    if seg is None:  # not grouped by key: sort them so (never the case for read_points)
        order = np.lexsort((step, kid))
        kid, step, val = kid[order], step[order], val[order]
        seg = _segments(kid) or {}
    for run_id, ids in group:
        segs = [(col, *seg[k]) for k, col in ids.items() if k in seg]
        got = _pivot(step, val, segs, ncols)
        if got is not None:
            yield run_id, *got


def export_windows(
    store: Any, req: ExportRequest, keys: list[str]
) -> Iterator[tuple[str, Any, list[tuple[Any, Any]]]]:
    """(run_id, steps, columns) for every run in order, about ``page_points`` in memory.

    Small runs are read together (one query for several runs' keys); a run larger than a
    page is read in step windows sized from its blocks.
    """

    page = max(1000, req.page_points)
    big = 1 << 62
    lo = req.min_step if req.min_step is not None else 0
    hi = req.max_step if req.max_step is not None else big
    with store.engine.connect() as conn:
        run_ids = _run_keys(conn, req.runs, keys)
        ext = _extents(conn, [k for ids in run_ids.values() for k in ids])
        group: list[tuple[str, dict[int, int]]] = []
        group_points = 0

        def flush() -> Iterator[tuple[str, Any, list[tuple[Any, Any]]]]:
            all_ids = [k for _, ids in group for k in ids]
            got = store.dialect.read_points(conn, all_ids, lo, hi)
            yield from _split(got, group, len(keys))

        for run_id in req.runs:
            ids = run_ids.get(run_id)
            if not ids:
                continue
            spans = [ext[k] for k in ids if k in ext]
            if not spans:
                continue
            total = sum(e[2] for e in spans)
            if total <= page:
                if group_points + total > page or len(group) >= _GROUP_RUNS:
                    yield from flush()
                    group, group_points = [], 0
                group.append((run_id, ids))
                group_points += total
                continue
            if group:
                yield from flush()
                group, group_points = [], 0
            s_lo = max(lo, min(e[0] for e in spans))
            s_hi = min(hi, max(e[1] for e in spans))
            width = max(1, int((s_hi - s_lo + 1) * page / total))
            a = s_lo
            while a <= s_hi:
                b = min(s_hi, a + width - 1)
                got = store.dialect.read_points(conn, list(ids), a, b)
                yield from _split(got, [(run_id, ids)], len(keys))
                a += width
        if group:
            yield from flush()


class _Sink:
    """A write-only file that hands back what was written since the last ``take()``."""

    closed = False

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


def _arrow_stream(store: Any, req: ExportRequest, keys: list[str]) -> Iterator[bytes]:
    import pyarrow as pa

    fields = [pa.field("run_id", pa.string()), pa.field("step", pa.int64())]
    fields += [pa.field(k, pa.float64()) for k in keys]
    schema = pa.schema(fields, metadata={"wisp_export_version": str(EXPORT_VERSION)})
    sink = _Sink()
    opts = pa.ipc.IpcWriteOptions(compression="lz4")
    writer = pa.ipc.new_stream(sink, schema, options=opts)
    for run_id, steps, cols in export_windows(store, req, keys):
        n = len(steps)
        arrays = [pa.repeat(pa.scalar(run_id, pa.string()), n), pa.array(steps)]
        for values, present in cols:
            if values is None:
                arrays.append(pa.nulls(n, pa.float64()))
            elif present is None:
                arrays.append(pa.array(values))
            else:
                arrays.append(pa.array(values, mask=~present))
        writer.write_batch(pa.record_batch(arrays, schema=schema))
        yield sink.take()
    writer.close()
    yield sink.take()


def _jsonl_stream(store: Any, req: ExportRequest, keys: list[str], gzip: bool) -> Iterator[bytes]:
    comp = zlib.compressobj(6, zlib.DEFLATED, 31) if gzip else None
    for run_id, steps, cols in export_windows(store, req, keys):
        lines = []
        vals = [
            (k, v.tolist(), p.tolist() if p is not None else None)
            for k, (v, p) in zip(keys, cols, strict=True)
            if v is not None
        ]
        for i, s in enumerate(steps.tolist()):
            row: dict[str, Any] = {"run_id": run_id, "step": s}
            for k, v, p in vals:
                if p is None or p[i]:
                    row[k] = v[i]
            lines.append(json.dumps(row, allow_nan=True))
        data = ("\n".join(lines) + "\n").encode()
        yield comp.compress(data) if comp is not None else data
    if comp is not None:
        yield comp.flush()


def prefetch(it: Iterator[bytes], depth: int = 2) -> Iterator[bytes]:
    """Produce ``it`` on its own thread, at most ``depth`` chunks ahead of the consumer.

    The database read of the next window overlaps sending this one; memory stays bounded
    by ``depth`` chunks.  When the consumer stops early (client gone), the producer stops
    at its next chunk; an error in the producer is raised to the consumer.
    """
    import queue
    import threading

    q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for chunk in it:
                if not put(("data", chunk)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            put(("error", exc))
            return
        put(("end", None))

    t = threading.Thread(target=produce, name="wisp-export", daemon=True)
    t.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        t.join(timeout=5)


def _all_keys(store: Any, runs: list[str]) -> list[str]:
    mk = S.metric_keys.c
    with store.engine.connect() as conn:
        q = select(mk.key).where(mk.run_id.in_(runs)).distinct()
        return sorted(conn.execute(q).scalars())


# -- endpoints ------------------------------------------------------------------------------


class ExportApi:
    """The handlers of this module (types above; prose: docs/http-api.md)."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store
        self.settings = settings

    async def _need_run(self, run_id: str) -> None:
        if await run_in_threadpool(self.store.get_run, run_id) is None:
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")

    @endpoint(
        "PATCH",
        "/runs/{run_id}",
        scope="write",
        summary="Edit a run's name, tags, notes or summary",
        path_params=T.RunPath,
        body=RunEdit,
        responses={200: T.RunPut},
    )
    async def patch_run(self, r: In) -> Response:
        run_id = r.path.run_id
        edit: RunEdit = r.body
        cols: dict[str, Any] = {}
        if edit.name is not None:
            cols["name"] = clean_str(edit.name, "name", MAX_NAME_LENGTH)
        if edit.tags is not None:
            cols["tags"] = check_tags(edit.tags, "tags")
        if edit.notes is not None:
            cols["notes"] = clean_str(edit.notes, "notes", MAX_NOTES_LENGTH)
        if edit.summary is not None:
            cols["summary"] = clean_json(edit.summary, "summary")
        run = await run_in_threadpool(edit_run, self.store, run_id, cols)
        if run is None:
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return json_response({"run": run})

    @endpoint(
        "DELETE",
        "/runs/{run_id}",
        scope="write",
        summary="Delete a run and its data",
        path_params=T.RunPath,
        responses={200: Deleted},
    )
    async def delete_run(self, r: In) -> Response:
        run_id = r.path.run_id
        if not await run_in_threadpool(delete_run, self.store, run_id):
            raise Problem(404, "run_not_found", f"no run {run_id!r}", "run_id")
        return json_response(msgspec.to_builtins(Deleted(run_id)))

    @endpoint(
        "GET",
        "/runs/{run_id}/files",
        scope="read",
        summary="Files saved with wisp.save()",
        path_params=T.RunPath,
        responses={200: RunFiles},
    )
    async def run_files(self, r: In) -> Response:
        run_id = r.path.run_id
        await self._need_run(run_id)
        files = await run_in_threadpool(run_files, self.store, run_id)
        return json_response({"files": files})

    @endpoint(
        "POST",
        "/export/histories",
        scope="read",
        summary="Numeric histories of many runs as one long table",
        body=ExportRequest,
        responses={
            200: {
                ARROW_TYPE: {"type": "string", "format": "binary"},
                "application/x-ndjson": {"type": "string"},
            }
        },
    )
    async def export_histories(self, r: In) -> Response:
        req: ExportRequest = r.body
        if not req.runs or len(req.runs) > MAX_EXPORT_RUNS:
            raise invalid("runs", f"expected 1 to {MAX_EXPORT_RUNS} run ids")
        req.runs = [check_id(x, "runs") for x in dict.fromkeys(req.runs)]
        await run_in_threadpool(need_runs_read, r.request, req.runs)  # rights on every run
        if req.format not in ("arrow", "jsonl"):
            raise invalid("format", "expected arrow or jsonl")
        for name in ("min_step", "max_step"):
            v = getattr(req, name)
            if v is not None and not 0 <= v <= MAX_STEP:
                raise invalid(name, f"expected 0..{MAX_STEP}")
        if req.keys is not None:
            if len(req.keys) > MAX_EXPORT_KEYS:
                raise invalid("keys", f"at most {MAX_EXPORT_KEYS} keys")
            keys = [clean_str(k, "keys", MAX_KEY_LENGTH) for k in dict.fromkeys(req.keys)]
        else:
            keys = await run_in_threadpool(_all_keys, self.store, req.runs)
        try:
            import numpy  # noqa: F401
        except ImportError:
            raise invalid(
                "format", f"history export needs numpy on the server: {install_hint('export')}"
            ) from None
        missing = await run_in_threadpool(self._missing_runs, req.runs)
        if missing:
            raise Problem(404, "run_not_found", f"no run {missing[0]!r}", "runs")
        headers = {"x-wisp-export-version": str(EXPORT_VERSION)}
        if req.format == "arrow":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise invalid(
                    "format",
                    f"the server has no pyarrow ({install_hint('export')}); use jsonl",
                ) from None
            it = prefetch(_arrow_stream(self.store, req, keys))
            return StreamingResponse(it, media_type=ARROW_TYPE, headers=headers)
        gz = "gzip" in r.request.headers.get("accept-encoding", "")
        if gz:
            headers["content-encoding"] = "gzip"
        it2 = prefetch(_jsonl_stream(self.store, req, keys, gz))
        return StreamingResponse(it2, media_type="application/x-ndjson", headers=headers)

    def _missing_runs(self, runs: list[str]) -> list[str]:
        r = S.runs.c
        with self.store.engine.connect() as conn:
            have = set(conn.execute(select(r.id).where(r.id.in_(runs))).scalars())
        return [x for x in runs if x not in have]
