"""Where a report's runs come from: a wisp server or a local folder, behind one interface.

``Source.select(project, runset)`` gives the run dicts a run set selects (the shape of the
server's ``RunRow``), ``series(runs, keys, x, max_step, buckets)`` their metrics downsampled
as the dashboard draws them (``{x, y, min, max}`` per run and key: at most ``buckets``
equal-width buckets, last value and extremes), ``last_step`` where a run's history ends.
Both ride on ``wisp.Api``'s backends (``wisp.api._local`` / ``_server``).
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Callable
from typing import Any

from wisp.errors import NotFoundError

__all__ = ["Source", "source_of"]

Series = dict[str, list[Any]]
Cols = tuple[list[int], list[float], list[float]]
Media = tuple[int, list[tuple[str, bytes | None]]] | None
MAX_INLINE_IMAGE = 2 << 20  # a media file inlined into a report: at most 2 MiB
#: suffix -> (how a media panel shows it, its MIME type): the files a report inlines
MEDIA_KINDS = {
    ".png": ("image", "image/png"),
    ".jpg": ("image", "image/jpeg"),
    ".jpeg": ("image", "image/jpeg"),
    ".gif": ("image", "image/gif"),
    ".wav": ("audio", "audio/wav"),
    ".mp3": ("audio", "audio/mpeg"),
    ".ogg": ("audio", "audio/ogg"),
    ".flac": ("audio", "audio/flac"),
    ".mp4": ("video", "video/mp4"),
    ".webm": ("video", "video/webm"),
    ".html": ("html", "text/html"),
    ".json": ("table", "application/json"),  # media/<hash>.table.json
}


def media_kind(name: str) -> tuple[str, str] | None:
    """(kind, MIME type) of a media file a report inlines, by its name; None: shown by name."""
    suffix = os.path.splitext(name)[1].lower()
    if suffix == ".json" and not name.endswith(".table.json"):
        return None
    return MEDIA_KINDS.get(suffix)


_TIME_AXES = ("time", "relative")
_PAGE = 1000
_IDS_PER_FILTER = 100


def _is_num(v: Any) -> bool:
    return (type(v) is float or type(v) is int) and type(v) is not bool


def source_of(api: Any) -> Source:
    """The source behind a ``wisp.Api``."""
    from wisp.api._local import LocalBackend

    backend = api._backend
    if isinstance(backend, LocalBackend):
        return LocalSource(backend)
    return ServerSource(backend)


class Source:
    """The operations a report needs from where its runs live."""

    where: str

    def list_runs(self, project: str, filters: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def series(
        self, runs: list[dict[str, Any]], keys: list[str], x: str, hi: int | None, buckets: int
    ) -> dict[tuple[str, str], Series]:
        raise NotImplementedError

    def last_step(self, run: dict[str, Any], keys: list[str]) -> int | None:
        """The last step of ``keys`` (all the run's metrics when it has none of them): the
        last bucket of a coarse series says where to look, ``tail`` reads the points from
        there exactly."""
        have = self.metric_keys(run)
        keys = [k for k in keys if k in have] or have
        if not keys:
            return None
        coarse = self.series([run], keys, "step", None, 64)
        starts = [s["x"][-1] for s in coarse.values() if s["x"]]
        if not starts:
            return None
        return self.tail(run, keys, int(max(starts)))

    def tail(self, run: dict[str, Any], keys: list[str], start: int) -> int | None:
        """The last step at or after ``start`` holding a value of ``keys``."""
        raise NotImplementedError

    def metric_keys(self, run: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def media(self, run: dict[str, Any], key: str, hi: int | None, want: int | None) -> Media:
        """(step, [(file name, its bytes when of a kind in ``MEDIA_KINDS`` and at most
        2 MiB)]) of the last value logged under ``key`` at a step <= ``hi`` and ``want``;
        None when there is none."""
        raise NotImplementedError

    def grouped(
        self,
        runs: list[dict[str, Any]],
        keys: list[str],
        group: list[str],
        hi: int | None,
        buckets: int,
        agg: str,
        band: str,
    ) -> list[tuple[str, int, list[str], str, Series]] | None:
        """Runs grouped by the values of ``group``, each key aggregated per group where the
        runs are: ``(label, runs, run ids, key, {x, y, min, max})``; None where this source
        cannot (the runs' series are then pooled here)."""
        return None

    def select(self, project: str, runset: Any) -> tuple[list[dict[str, Any]], list[str]]:
        """(the runs of ``runset`` in ``project``, the ids it names that do not exist)."""
        if runset.runs is None:
            return self.list_runs(project, runset.filter), []
        found: dict[str, dict[str, Any]] = {}
        ids = list(dict.fromkeys(runset.runs))
        for i in range(0, len(ids), _IDS_PER_FILTER):
            part = ids[i : i + _IDS_PER_FILTER]
            expr = " or ".join(f'id = "{r}"' for r in part)  # ids: [A-Za-z0-9_-] only
            for run in self.list_runs(project, expr):
                found[run["id"]] = run
        return [found[r] for r in ids if r in found], [r for r in ids if r not in found]


def last_media(
    items: list[dict[str, Any]],
    hi: int | None,
    want: int | None,
    fetch: Callable[[str, str], bytes | None],
) -> Media:
    """The files of the last media item (``{step, _type, path, sha256 | items}``, as the
    server lists them) within the bounds, image bytes from ``fetch(sha256, suffix)``."""
    ok = [
        m for m in items if (hi is None or m["step"] <= hi) and (want is None or m["step"] <= want)
    ]
    if not ok:
        return None
    last = max(ok, key=lambda m: m["step"])
    parts = last.get("items") if last.get("_type") == "images" else [last]
    files: list[tuple[str, bytes | None]] = []
    for part in parts or []:
        if not isinstance(part, dict) or not isinstance(part.get("path"), str):
            continue
        name = os.path.basename(part["path"])
        suffix = os.path.splitext(name)[1].lower()
        sha = part.get("sha256")
        data = fetch(sha, suffix) if isinstance(sha, str) and media_kind(name) else None
        files.append((name, data))
    return int(last["step"]), files


def _downsample(xs: list[float], ys: list[float], buckets: int) -> Series:
    """At most ``buckets`` equal-width x buckets: first x, last y, min and max over finite y
    (the rule of the server's series, ``wisp.api._local._downsample``)."""
    from wisp.api._local import _downsample as down

    got: Series = down(xs, ys, buckets)  # type: ignore[arg-type]
    return {k: got[k] for k in ("x", "y", "min", "max")}


def _by_step(steps: list[int], values: list[float], hi: int | None, buckets: int) -> Series:
    """One key's points at steps <= ``hi``, in step order (a key logged twice at a step:
    logged order), downsampled by ``_downsample``'s rule (with numpy when it is installed)."""
    try:
        import numpy as np
    except ImportError:
        np = None  # type: ignore[assignment]
    if np is None or len(steps) <= buckets:
        if steps != sorted(steps):  # a resumed run may log steps again: stable sort by step
            by = sorted(range(len(steps)), key=steps.__getitem__)
            steps, values = [steps[i] for i in by], [values[i] for i in by]
        if hi is not None:
            cut = bisect.bisect_right(steps, hi)
            steps, values = steps[:cut], values[:cut]
        return _downsample(steps, values, buckets)  # type: ignore[arg-type]
    st, v = np.asarray(steps, np.int64), np.asarray(values, np.float64)
    if len(st) > 1 and (st[1:] < st[:-1]).any():
        order = np.argsort(st, kind="stable")
        st, v = st[order], v[order]
    if hi is not None:
        cut = int(np.searchsorted(st, hi, "right"))
        st, v = st[:cut], v[:cut]
    if len(st) <= buckets:
        return _downsample(st.tolist(), v.tolist(), buckets)
    lo = int(st[0])
    width = (int(st[-1]) - lo + 1) / buckets
    b = np.minimum(((st - lo) / width).astype(np.int64), buckets - 1)
    first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    last = np.r_[first[1:], len(st)] - 1
    fin = np.where(np.isfinite(v), v, np.nan)

    def listed(a: Any) -> list[Any]:  # NaN (a bucket without a finite value): None
        return [None if f != f else f for f in a.tolist()]

    return {
        "x": st[first].tolist(),
        "y": v[last].tolist(),
        "min": listed(np.fmin.reduceat(fin, first)),
        "max": listed(np.fmax.reduceat(fin, first)),
    }


class LocalSource(Source):
    """Runs of a local folder, read with ``open_run`` once each and kept."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.where = backend.root
        self._points: dict[str, dict[str, Cols]] = {}
        self._asked: dict[str, set[str] | None] = {}  # keys read per run (None: all)

    def list_runs(self, project: str, filters: str) -> list[dict[str, Any]]:
        runs, _ = self.backend.list_runs(project, filters, "created_at", "asc", 10**9, 0)
        return [{**r, "key": r["id"]} for r in runs]

    def _load(self, run: dict[str, Any], keys: list[str] | None = None) -> dict[str, Cols]:
        """key -> (steps, timestamps, values) of the run's numeric history (of ``keys``, or
        every key), each key's columns read from the run file once."""
        d = run["_dir"]
        have = self._points.setdefault(d, {})
        asked = self._asked.get(d, set())
        if asked is None:
            return have
        missing = None if keys is None else [k for k in keys if k not in asked]
        if missing == []:
            return have
        cols = self.backend._open(d).history_columns(missing)
        have.update((k, v) for k, v in cols.items() if k[0] != "_")
        self._asked[d] = None if missing is None else asked | set(missing)
        return have

    def series(
        self, runs: list[dict[str, Any]], keys: list[str], x: str, hi: int | None, buckets: int
    ) -> dict[tuple[str, str], Series]:
        out: dict[tuple[str, str], Series] = {}
        for run in runs:
            pts = self._load(run, [*keys, x])
            xcol = None if x == "step" or x in _TIME_AXES else pts.get(x)
            if xcol is None and x not in ("step", *_TIME_AXES):
                continue
            xat = dict(zip(xcol[0], xcol[2], strict=True)) if xcol is not None else {}
            for key in keys:
                col = pts.get(key)
                if col is None:
                    continue
                if x == "step":
                    out[(run["id"], key)] = _by_step(col[0], col[2], hi, buckets)
                    continue
                xs: list[float] = []
                ys: list[float] = []
                for step, ts, v in zip(*col, strict=True):
                    if hi is not None and step > hi:
                        continue
                    if x == "time":
                        xs.append(ts)
                    elif x == "relative":
                        xs.append(ts - float(run.get("created_at") or 0.0))
                    elif step in xat and math.isfinite(xat[step]):
                        xs.append(xat[step])
                    else:
                        continue
                    ys.append(v)
                if x not in ("step", *_TIME_AXES):
                    order = sorted(range(len(xs)), key=xs.__getitem__)
                    xs, ys = [xs[i] for i in order], [ys[i] for i in order]
                out[(run["id"], key)] = _downsample(xs, ys, buckets)
        return out

    def last_step(self, run: dict[str, Any], keys: list[str]) -> int | None:
        pts = self._load(run)
        keys = [k for k in keys if k in pts] or list(pts)
        steps = [pts[k][0][-1] for k in keys if pts[k][0]]
        return max(steps, default=None)

    def metric_keys(self, run: dict[str, Any]) -> list[str]:
        return sorted(self._load(run))

    def media(self, run: dict[str, Any], key: str, hi: int | None, want: int | None) -> Media:
        from wisp.errors import WispError

        data = self.backend._open(run["_dir"])
        try:
            steps, paths = data.media_files(key)
        except (WispError, KeyError, TypeError):  # not a media key in this run
            return None
        ok = [
            (s, p)
            for s, p in zip(steps, paths, strict=True)
            if (hi is None or s <= hi) and (want is None or s <= want)
        ]
        if not ok:
            return None
        step, files = ok[-1]
        out: list[tuple[str, bytes | None]] = []
        for path in files:
            small = os.path.exists(path) and os.path.getsize(path) <= MAX_INLINE_IMAGE
            if small and media_kind(path):
                with open(path, "rb") as f:
                    out.append((os.path.basename(path), f.read()))
            else:
                out.append((os.path.basename(path), None))
        return step, out


class ServerSource(Source):
    """Runs of a wisp server: ``GET /projects/{p}/runs`` and ``GET /series``."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.where = backend.http.server_url

    def list_runs(self, project: str, filters: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            page, total = self.backend.list_runs(
                project, filters, "created_at", "asc", _PAGE, len(out)
            )
            out.extend(page)
            if not page or len(out) >= total:
                return out

    def series(
        self, runs: list[dict[str, Any]], keys: list[str], x: str, hi: int | None, buckets: int
    ) -> dict[tuple[str, str], Series]:
        out: dict[tuple[str, str], Series] = {}
        by_key = {str(r["key"]): r["id"] for r in runs}
        per = max(1, min(200, 2000 // max(1, len(keys))))
        for i in range(0, len(runs), per):
            part = [str(r["key"]) for r in runs[i : i + per]]
            query: dict[str, Any] = {"runs": ",".join(part), "keys": ",".join(keys), "x": x}
            query["buckets"] = buckets
            if hi is not None and x == "step":
                query["max"] = hi
            doc = self.backend.http.json("GET", "/series", query=query)
            for s in doc.get("series", []):
                run_id = by_key.get(s["run"], s["run"])
                out[(run_id, s["key"])] = {k: s[k] for k in ("x", "y", "min", "max")}
        return out

    def tail(self, run: dict[str, Any], keys: list[str], start: int) -> int | None:
        last = None
        for row in self.backend.scan(str(run["key"]), keys, start, None, 10_000):
            last = row["_step"]
        return last

    def metric_keys(self, run: dict[str, Any]) -> list[str]:
        try:
            return list(self.backend.metric_keys(str(run["key"])))
        except NotFoundError:
            return []

    def media(self, run: dict[str, Any], key: str, hi: int | None, want: int | None) -> Media:
        from wisp.api._http import q

        http = self.backend.http
        doc = http.json("GET", f"/runs/{q(str(run['key']))}/media", query={"key": key})

        def fetch(sha: str, suffix: str) -> bytes | None:
            data: bytes = http.raw(f"/media/{sha}{suffix}")
            return data if len(data) <= MAX_INLINE_IMAGE else None

        return last_media(list(doc.get("media", [])), hi, want, fetch)
