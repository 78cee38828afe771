"""``wisp.Api`` over a local folder: runs found by ``_rundir`` and read by ``open_run``.

Run dicts take the shape the server returns; filters are parsed by the server's grammar
(``wisp.server.query.filter``, standard library only) and evaluated by ``_filters.evaluate``.
Only numeric history values are histories here, as on the server.  Config and summary
edits are appended to the finished run's file (CONFIG and SUMMARY records, as the SDK writes
them); the process that wrote a run owns its name, tags and notes, so editing those locally
is refused with the reason.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Iterator
from typing import Any

from wisp.api._filters import evaluate, parse
from wisp.errors import NotFoundError, UsageError

__all__ = ["LocalBackend"]

_META = ("_step", "_timestamp")


def _is_num(v: Any) -> bool:
    return (type(v) is float or type(v) is int) and type(v) is not bool


class LocalBackend:
    """Runs under ``root`` (a folder holding ``wisp/run-*`` directories, or run dirs)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self._cache: dict[str, tuple[float, Any]] = {}

    def close(self) -> None:
        self._cache.clear()

    # -- discovery -----------------------------------------------------------------------------

    def _dirs(self) -> list[str]:
        from wisp._rundir import run_dirs_under

        if not os.path.isdir(self.root):
            raise NotFoundError(f"no folder {self.root}")
        return run_dirs_under([self.root])

    def _open(self, run_dir: str) -> Any:
        from wisp._reader import open_run
        from wisp._rundir import RUN_FILE

        try:
            mtime = os.stat(os.path.join(run_dir, RUN_FILE)).st_mtime
        except OSError:
            mtime = 0.0
        hit = self._cache.get(run_dir)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        data = open_run(run_dir)
        self._cache[run_dir] = (mtime, data)
        return data

    def _all(self) -> list[dict[str, Any]]:
        return [self._dict(self._open(d)) for d in self._dirs()]

    def _dict(self, data: Any) -> dict[str, Any]:
        m = data.metadata
        fin = data.finish or {}
        created = float(m.get("created_at") or 0.0)
        finished = fin.get("finished_at")
        return {
            "id": data.id,
            "project": data.project,
            "name": data.name,
            "state": data.state,
            "tags": list(m.get("tags") or []),
            "group": m.get("group"),
            "job_type": m.get("job_type"),
            "notes": m.get("notes") or "",
            "created_at": created,
            "finished_at": finished,
            "duration": max(0.0, (finished or created) - created),
            "exit_code": fin.get("exit_code"),
            "config": data.config,
            "summary": data.summary,
            "metadata": m,
            "_dir": data.dir,
        }

    def _find(self, run_id: str, project: str | None = None) -> Any:
        """The run with id ``run_id`` (in ``project`` when given: ids are unique per project)."""

        def match(data: Any) -> bool:
            return bool(data.id == run_id and (project is None or data.project == project))

        for d in self._dirs():
            if d.rstrip("/").endswith("-" + run_id):
                data = self._open(d)
                if match(data):
                    return data
        for d in self._dirs():
            data = self._open(d)
            if match(data):
                return data
        raise NotFoundError(f"run {run_id!r} not found under {self.root}")

    # -- runs ----------------------------------------------------------------------------------

    def projects(self) -> list[dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self._all():
            p = out.setdefault(r["project"], {"name": r["project"], "run_count": 0})
            p["run_count"] += 1
            last = r["finished_at"] or r["created_at"]
            p["last_activity"] = max(p.get("last_activity") or 0.0, last)
        return [out[k] for k in sorted(out)]

    def check_project(self, project: str) -> None:
        names = [p["name"] for p in self.projects()]
        if project not in names:
            raise NotFoundError(
                f"no project {project!r} under {self.root} ({', '.join(names) or 'none'})"
            )

    def list_runs(
        self, project: str, filters: str, sort: str, order: str, limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        tree = parse(filters)
        runs = [r for r in self._all() if r["project"] == project and evaluate(tree, r)]
        from wisp.server.http.problem import Problem
        from wisp.server.query.filter import field_path

        try:
            path = field_path(sort)
        except Problem as p:
            raise UsageError(f"order: {p.message.replace('filter: ', '')}") from None

        def key(r: dict[str, Any]) -> tuple[int, Any, str]:
            v: Any = r
            for part in path:
                v = v.get(part) if isinstance(v, dict) else None
            if _is_num(v):
                return (0, float(v), r["id"])
            if isinstance(v, str):
                return (1, v, r["id"])
            return (2, "", r["id"])

        present = [r for r in runs if key(r)[0] < 2]
        missing = [r for r in runs if key(r)[0] == 2]
        nums = sorted((r for r in present if key(r)[0] == 0), key=key, reverse=order == "desc")
        texts = sorted((r for r in present if key(r)[0] == 1), key=key, reverse=order == "desc")
        ordered = nums + texts + sorted(missing, key=lambda r: r["id"])
        return ordered[offset : offset + limit], len(runs)

    def get_run(self, run_id: str, project: str | None = None) -> dict[str, Any]:
        return self._dict(self._find(run_id, project))

    def metric_keys(self, run_id: str) -> list[str]:
        data = self._find(run_id)
        seen: dict[str, None] = {}
        for row in data.history():
            for k, v in row.items():
                if k not in seen and k not in _META and _is_num(v):
                    seen[k] = None
        return sorted(seen)

    def run_url(self, project: str, run_key: str) -> None:
        return None

    def user_name(self) -> None:
        return None

    def stop(self, run_id: str) -> None:
        raise UsageError(
            "stopping a run needs a server: the run's process learns of it through its uploads"
        )

    def alerts(self, run_id: str) -> list[dict[str, Any]]:
        return [dict(a) for a in self._find(run_id).records.get("alert", ())]

    def console_lines(self, run_id: str) -> Iterator[str]:
        for rec in self._find(run_id).records.get("console", ()):
            for line in rec.get("lines") or ():
                yield str(line[2])

    def edit(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Append the new config and summary to the run file; refuse what a local run
        cannot take, naming why (nothing is written then)."""
        data = self._find(run_id)
        fixed = sorted(k for k in body if k not in ("config", "summary"))
        if fixed:
            raise UsageError(
                f"run {run_id!r} in {data.dir}: {', '.join(fixed)} of a local run are kept by "
                "the process that wrote it; edit them on a server (wisp sync, then "
                "wisp.Api(server_url)), or config and summary here"
            )
        if data.state == "running" or data.ranks:
            why = "is still running" if data.state == "running" else "was written by several ranks"
            raise UsageError(f"run {run_id!r} in {data.dir} {why}: edit it on a server")
        from wisp._runfile import RecordType, encode_record, scan

        if scan(data.path).ignored:
            raise UsageError(f"{data.path} has a damaged tail: nothing appended (wisp doctor)")
        import json

        out = b""
        for name, rtype in (("config", RecordType.CONFIG), ("summary", RecordType.SUMMARY)):
            if name in body:
                payload = json.dumps({name: body[name]}, allow_nan=True).encode("utf-8")
                out += encode_record(rtype, payload)
        with open(data.path, "ab") as f:
            f.write(out)
            f.flush()
            os.fsync(f.fileno())
        self._cache.pop(data.dir, None)
        return self.get_run(run_id, data.project)

    def delete(self, run_id: str) -> None:
        raise UsageError("deleting runs needs a server; locally, remove the run's directory")

    # -- histories -----------------------------------------------------------------------------

    def _points(
        self, run_id: str, keys: list[str] | None, lo: int | None, hi: int | None
    ) -> dict[int, dict[str, float]]:
        """step -> {key: value} of numeric values (a key logged twice at a step: the last)."""
        data = self._find(run_id)
        want = set(keys) if keys is not None else None
        out: dict[int, dict[str, float]] = {}
        for row in data.history():
            step = row["_step"]
            if (lo is not None and step < lo) or (hi is not None and step > hi):
                continue
            for k, v in row.items():
                if k not in _META and _is_num(v) and (want is None or k in want):
                    out.setdefault(step, {})[k] = float(v)
        return out

    def series(self, run_id: str, keys: list[str], x: str, samples: int) -> list[dict[str, Any]]:
        if x != "step":
            raise UsageError("a local folder's history() supports x_axis='_step' only")
        pts = self._points(run_id, keys, None, None)
        steps = sorted(pts)
        out = []
        for k in keys:
            xs = [s for s in steps if k in pts[s]]
            ys = [pts[s][k] for s in xs]
            out.append({"key": k, **_downsample(xs, ys, samples)})
        return out

    def scan(
        self,
        run_id: str,
        keys: list[str],
        lo: int | None,
        hi: int | None,
        page: int,
        complete: bool = False,
    ) -> Iterator[dict[str, Any]]:
        pts = self._points(run_id, keys, lo, hi)
        for s in sorted(pts):
            got = pts[s]
            if not complete or len(got) == len(keys):
                yield {"_step": s, **{k: got[k] for k in keys if k in got}}

    def export(
        self,
        run_ids: list[str],
        keys: list[str] | None,
        lo: int | None,
        hi: int | None,
        batch: int,
    ) -> Iterator[Any]:
        for run_id in run_ids:
            pts = self._points(run_id, keys, lo, hi)
            yield [{"run_id": run_id, "step": s, **pts[s]} for s in sorted(pts)]

    def system(self, run_id: str, keys: list[str]) -> list[dict[str, Any]]:
        """The run's SYSTEM samples in time order: ``{"_timestamp": s, "system/...": v}``."""
        data = self._find(run_id)
        rows = []
        for rec in data.records.get("system", []):
            if isinstance(rec, dict) and isinstance(rec.get("values"), dict):
                vals = {k: v for k, v in rec["values"].items() if _is_num(v)}
                rows.append({"_timestamp": float(rec.get("ts") or 0.0), **vals})
        return sorted(rows, key=lambda r: r["_timestamp"])

    # -- lineage (wisp.api._lineage) ----------------------------------------------------------

    def lineage(self, run_id: str) -> dict[str, Any]:
        data = self._find(run_id)
        p = data.parent
        parent = None if p is None else {k: p[k] for k in ("run_id", "project", "step")}
        aside = [
            {
                "rewind": a["rewind"],
                "step": a["step"],
                "rows": len(a["rows"]),
                "min_step": min((r[0] for r in a["rows"]), default=None),
                "max_step": max((r[0] for r in a["rows"]), default=None),
            }
            for a in data.set_aside
        ]
        return {"parent": parent, "set_aside": aside}

    def forks(self, run_id: str) -> list[dict[str, Any]]:
        from wisp._rundir import read_meta

        data = self._find(run_id)
        out = []
        for d in self._dirs():  # run.json names a fork's parent: no run file is read
            parent = read_meta(d).get("fork_from")
            if (
                isinstance(parent, dict)
                and parent.get("run_id") == run_id
                and parent.get("project") in (None, data.project)
            ):
                out.append(self._dict(self._open(d)))
        return sorted(out, key=lambda r: r["created_at"])

    def scan_set_aside(self, run_id: str, rewind: int | None) -> Iterator[dict[str, Any]]:
        for row in self._find(run_id).history(set_aside=True):
            if "_rewind" in row and (rewind is None or row["_rewind"] == rewind):
                yield row

    def restore_set_aside(self, run_id: str, rewind: int) -> dict[str, Any]:
        from wisp._init import new_run_id
        from wisp._lineage import restore_set_aside

        new_dir = restore_set_aside(self._find(run_id).dir, new_run_id(), rewind)
        return self._dict(self._open(new_dir))

    # -- files ---------------------------------------------------------------------------------

    def files(self, run_id: str) -> list[dict[str, Any]]:
        data = self._find(run_id)
        out: dict[str, dict[str, Any]] = {}
        for rec in data.records.get("file", []):
            if isinstance(rec, dict) and isinstance(rec.get("name"), str):
                out[rec["name"]] = {**rec, "_dir": data.dir}
        return list(out.values())

    def file_bytes(self, run_id: str, info: dict[str, Any]) -> bytes:
        from wisp._localpath import local_path

        path = local_path(
            info["_dir"], info.get("path") or info["name"], what=f"run {run_id!r} file"
        )
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise NotFoundError(
                f"file {info['name']!r} of run {run_id!r}: {path} is gone"
            ) from None


def _downsample(xs: list[int], ys: list[float], buckets: int) -> dict[str, Any]:
    """At most ``buckets`` equal-width step buckets: first x, last y, min and max.

    As on the server, min and max are over finite values (None when a bucket has none).
    ``xs`` ascend: each bucket is a slice found by bisection, its extremes taken by
    ``min``/``max`` over the slice (a bucket with a NaN or an infinity filtered first).
    """
    if len(xs) <= buckets:
        return {"x": xs, "y": ys, "min": ys, "max": ys, "raw": True, "count": len(xs)}
    lo, hi = xs[0], xs[-1]
    width = (hi - lo + 1) / buckets

    def index(x: float) -> int:
        return min(int((x - lo) / width), buckets - 1)

    out: dict[str, list[Any]] = {"x": [], "y": [], "min": [], "max": []}
    start, n = 0, len(xs)
    while start < n:
        b = index(xs[start])
        end = bisect.bisect_left(xs, lo + (b + 1) * width, start)
        while end > start + 1 and index(xs[end - 1]) > b:  # float rounding at the edge
            end -= 1
        while end < n and index(xs[end]) == b:
            end += 1
        part = ys[start:end]
        if not math.isfinite(sum(part)):
            part = [y for y in part if math.isfinite(y)]
        out["x"].append(xs[start])
        out["y"].append(ys[end - 1])
        out["min"].append(min(part) if part else None)
        out["max"].append(max(part) if part else None)
        start = end
    return {**out, "raw": False, "count": len(xs)}
