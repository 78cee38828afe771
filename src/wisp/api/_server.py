"""``wisp.Api`` over a wisp server (HTTP API v1, docs/http-api.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from wisp._protocol import project_path
from wisp.api._http import HttpApi, q
from wisp.api._tables import arrow_available
from wisp.errors import FatalApiError, NotFoundError, UsageError

__all__ = ["ServerBackend"]

_MAX_SERIES = 2000


class ServerBackend:
    """Reads and edits through the server's endpoints; one :class:`HttpApi` per backend."""

    def __init__(self, http: HttpApi) -> None:
        self.http = http
        self._keys: dict[str, list[str]] = {}

    def close(self) -> None:
        self.http.close()

    def _not_found(self, exc: FatalApiError, what: str) -> Exception:
        if exc.status == 404:
            return NotFoundError(f"{what} not found on {self.http.server_url}", status=404)
        return exc

    # -- runs ----------------------------------------------------------------------------------

    def projects(self) -> list[dict[str, Any]]:
        return list(self.http.json("GET", "/projects").get("projects", []))

    def check_project(self, project: str) -> None:
        names = [p["name"] for p in self.projects()]
        if project not in names:
            shown = ", ".join(names[:20]) or "none"
            raise NotFoundError(f"no project {project!r} on {self.http.server_url} ({shown})")

    def list_runs(
        self, project: str, filters: str, sort: str, order: str, limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        query: dict[str, Any] = {"filter": filters or None, "sort": sort, "order": order}
        query |= {"limit": limit, "offset": offset}
        try:
            doc = self.http.json("GET", f"{project_path(project)}/runs", query=query)
        except FatalApiError as exc:
            if exc.status == 422:
                from wisp.errors import UsageError

                raise UsageError(str(exc)) from None
            raise
        return list(doc.get("runs", [])), int(doc.get("total", 0))

    def get_run(self, run_id: str, project: str | None = None) -> dict[str, Any]:
        """The run with key ``run_id``, or with id ``run_id`` in ``project``."""
        path = f"/runs/{q(run_id)}"
        if project is not None:
            path = f"{project_path(project)}/runs/{q(run_id)}"
        try:
            doc = self.http.json("GET", path)
        except FatalApiError as exc:
            if exc.status == 404 and project is not None and "no endpoint" in str(exc):
                return self.get_run(run_id)  # a server from before run keys: ids are keys
            raise self._not_found(exc, f"run {run_id!r}") from None
        self._keys[str(doc.get("key") or run_id)] = list(doc.get("metric_keys", []))
        return doc

    def metric_keys(self, run_id: str) -> list[str]:
        if run_id not in self._keys:
            self.get_run(run_id)
        return self._keys[run_id]

    def run_url(self, project: str, run_key: str) -> str:
        from wisp._upload._live import run_page_url

        return run_page_url(self.http.server_url, project, run_key)

    def user_name(self) -> str | None:
        """The user of the API key (``GET /auth/me``), None without one."""
        try:
            name = self.http.json("GET", "/auth/me").get("user")
        except FatalApiError:
            return None
        return None if name is None else str(name)

    def stop(self, run_id: str) -> None:
        try:
            self.http.json("POST", f"/runs/{q(run_id)}/stop", body={})
        except FatalApiError as exc:
            raise self._not_found(exc, f"run {run_id!r}") from None

    def console_lines(self, run_id: str, page: int = 10_000) -> Iterator[str]:
        after = -1
        while True:
            got = self.http.json(
                "GET", f"/runs/{q(run_id)}/console", query={"after": after, "limit": page}
            )["lines"]
            for line in got:
                yield str(line["text"])
            if len(got) < page:
                return
            after = int(got[-1]["id"])

    def edit(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """PATCH the run; a field the server answers without having saved it (a server that
        predates editing it) is a UsageError naming it, never a silent loss."""
        try:
            doc = self.http.json("PATCH", f"/runs/{q(run_id)}", body=body)
        except FatalApiError as exc:
            if exc.status == 422:
                from wisp.errors import UsageError

                raise UsageError(f"the server refused the edit of run {run_id!r}: {exc}") from None
            raise self._not_found(exc, f"run {run_id!r}") from None
        run: dict[str, Any] = doc["run"]
        lost = [k for k in body if k not in run]
        lost += [k for k in ("config", "group", "job_type") if k in body and run.get(k) != body[k]]
        if lost:
            from wisp.errors import UsageError

            raise UsageError(
                f"{self.http.server_url} did not save {', '.join(sorted(lost))} of run "
                f"{run_id!r}: the server predates editing them (upgrade it); other fields "
                "were saved"
            )
        return run

    def system(self, run_id: str, keys: list[str]) -> list[dict[str, Any]]:
        """System samples in time order: ``{"_timestamp": s, "system/...": v}`` (the server
        keeps them as points at step = time in ms)."""
        if not keys:
            return []
        rows = []
        for row in self.scan(run_id, keys, None, None, 10_000):
            ms = row.pop("_step")
            rows.append({"_timestamp": ms / 1000.0, **row})
        return rows

    def delete(self, run_id: str) -> None:
        try:
            self.http.json("DELETE", f"/runs/{q(run_id)}")
        except FatalApiError as exc:
            raise self._not_found(exc, f"run {run_id!r}") from None
        self._keys.pop(run_id, None)

    # -- histories -----------------------------------------------------------------------------

    def series(self, run_id: str, keys: list[str], x: str, samples: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        step = min(500, _MAX_SERIES)
        for i in range(0, len(keys), step):
            part = keys[i : i + step]
            query = {"runs": run_id, "keys": ",".join(part), "x": x, "buckets": samples}
            out.extend(self.http.json("GET", "/series", query=query).get("series", []))
        exact = [s["key"] for s in out if s["raw"] and s.get("nonfinite")]
        if exact and x == "step":  # the series endpoint sends null for NaN/inf: fetch them
            points: dict[str, dict[int, float]] = {k: {} for k in exact}
            for row in self.scan(run_id, exact, None, None, 100_000):
                for k in exact:
                    if k in row:
                        points[k][row["_step"]] = row[k]
            for s in out:
                if s["key"] in points:
                    got = points[s["key"]]
                    s["y"] = [
                        got.get(xv, y) if y is None else y
                        for xv, y in zip(s["x"], s["y"], strict=True)
                    ]
        return out

    def _export_body(
        self, runs: list[str], keys: list[str] | None, lo: int | None, hi: int | None, fmt: str
    ) -> dict[str, Any]:
        return {"runs": runs, "keys": keys, "format": fmt, "min_step": lo, "max_step": hi}

    def _export_stream(
        self,
        runs: list[str],
        keys: list[str] | None,
        lo: int | None,
        hi: int | None,
        page_points: int | None = None,
    ) -> Iterator[Any]:
        """Record batches (pyarrow) or lists of row dicts (JSON lines) for ``runs``."""
        fmt = "arrow" if arrow_available() else "jsonl"
        body = self._export_body(runs, keys, lo, hi, fmt)
        if page_points is not None:
            body["page_points"] = page_points
        accept = "application/vnd.apache.arrow.stream" if fmt == "arrow" else "application/x-ndjson"
        try:
            stream = self.http.stream("/export/histories", body, accept)
        except FatalApiError as exc:
            if exc.status == 422 and fmt == "arrow" and "pyarrow" in str(exc):
                yield from self._jsonl(runs, keys, lo, hi, page_points)
                return
            raise self._not_found(exc, "a run of the export") from None
        with stream:
            if stream.content_type.endswith("arrow.stream"):
                import pyarrow as pa

                reader = pa.ipc.open_stream(stream)
                yield from reader
            else:
                yield from _rows(stream)

    def _jsonl(
        self,
        runs: list[str],
        keys: list[str] | None,
        lo: int | None,
        hi: int | None,
        page_points: int | None,
    ) -> Iterator[Any]:
        body = self._export_body(runs, keys, lo, hi, "jsonl")
        if page_points is not None:
            body["page_points"] = page_points
        with self.http.stream("/export/histories", body, "application/x-ndjson") as stream:
            yield from _rows(stream)

    def export(
        self,
        run_ids: list[str],
        keys: list[str] | None,
        lo: int | None,
        hi: int | None,
        batch: int,
    ) -> Iterator[Any]:
        for i in range(0, len(run_ids), batch):
            yield from self._export_stream(run_ids[i : i + batch], keys, lo, hi)

    def scan(
        self,
        run_id: str,
        keys: list[str],
        lo: int | None,
        hi: int | None,
        page: int,
        complete: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Rows ``{"_step", key: value}`` in step order; ``complete``: only rows holding
        every key."""
        page_points = max(1000, page * max(1, len(keys)))
        width = len(keys) + 1
        for part in self._export_stream([run_id], keys, lo, hi, page_points):
            if isinstance(part, list):
                for row in part:
                    row.pop("run_id", None)
                    row["_step"] = row.pop("step")
                    if not complete or len(row) == width:
                        yield row
                continue
            yield from _batch_rows(part, keys, complete)

    # -- files ---------------------------------------------------------------------------------

    def _lineage(self, run_id: str) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = self.http.json("GET", f"/runs/{q(run_id)}/lineage")
        except FatalApiError as exc:
            raise self._not_found(exc, f"lineage of run {run_id!r}") from None
        return doc

    def lineage(self, run_id: str) -> dict[str, Any]:
        doc = self._lineage(run_id)
        p = doc.get("parent")
        parent = (
            None if p is None else {"run_id": p["id"], "project": p["project"], "step": p["step"]}
        )
        aside = [
            {"rewind": a["rewind"], "step": a["step"], "rows": a["points"],
             "min_step": a["min_step"], "max_step": a["max_step"]}
            for a in doc.get("set_aside", [])
        ]  # fmt: skip
        return {"parent": parent, "set_aside": aside}

    def forks(self, run_id: str) -> list[dict[str, Any]]:
        return [self.get_run(f["key"]) for f in self._lineage(run_id).get("forks", [])]

    def scan_set_aside(self, run_id: str, rewind: int | None) -> Iterator[dict[str, Any]]:
        for part in self.lineage(run_id)["set_aside"]:
            number = part["rewind"]
            if rewind is not None and number != rewind:
                continue
            try:
                body = self.http.raw(f"/runs/{q(run_id)}/set-aside/{number}/history")
            except FatalApiError as exc:
                raise self._not_found(exc, f"rewind {number} of run {run_id!r}") from None
            for line in body.splitlines():
                if line.strip():
                    yield {**json.loads(line), "_rewind": number}

    def restore_set_aside(self, run_id: str, rewind: int) -> dict[str, Any]:
        parts = self.lineage(run_id)["set_aside"]
        try:
            number = parts[rewind]["rewind"]
        except (IndexError, TypeError):
            raise UsageError(
                f"rewind index {rewind!r} out of range: run {run_id!r} has {len(parts)} "
                "rewind(s) with rows set aside"
            ) from None
        try:
            doc = self.http.json("POST", f"/runs/{q(run_id)}/set-aside/{number}/restore")
        except FatalApiError as exc:
            raise self._not_found(exc, f"rewind {number} of run {run_id!r}") from None
        return self.get_run(str(doc["key"]))

    def files(self, run_id: str) -> list[dict[str, Any]]:
        try:
            return list(self.http.json("GET", f"/runs/{q(run_id)}/files").get("files", []))
        except FatalApiError as exc:
            raise self._not_found(exc, f"run {run_id!r}") from None

    def file_bytes(self, run_id: str, info: dict[str, Any]) -> bytes:
        sha = info.get("sha256")
        if not sha:
            raise NotFoundError(f"file {info['name']!r} of run {run_id!r} was not uploaded")
        try:
            return self.http.raw(f"/media/{sha}")
        except FatalApiError as exc:
            raise self._not_found(exc, f"file {info['name']!r} of run {run_id!r}") from None


def _rows(stream: Any, chunk: int = 10_000) -> Iterator[list[dict[str, Any]]]:
    buf: list[dict[str, Any]] = []
    for line in stream.lines():
        buf.append(json.loads(line))
        if len(buf) >= chunk:
            yield buf
            buf = []
    if buf:
        yield buf


def _batch_rows(batch: Any, keys: list[str], complete: bool) -> Iterator[dict[str, Any]]:
    """Row dicts ``{"_step", key: value}`` of a record batch, absent values left out (with
    ``complete``, rows lacking a key left out)."""
    steps = batch.column(1).to_pylist()
    cols = [batch.column(i + 2) for i in range(len(keys))]
    if all(c.null_count == 0 for c in cols):
        names = ("_step", *keys)
        values = [c.to_numpy(zero_copy_only=False).tolist() for c in cols]
        for tup in zip(steps, *values, strict=True):
            yield dict(zip(names, tup, strict=True))
        return
    lists = [c.to_pylist() for c in cols]
    for i, s in enumerate(steps):
        row: dict[str, Any] = {"_step": s}
        for k, col in zip(keys, lists, strict=True):
            v = col[i]
            if v is not None:
                row[k] = v
        if not complete or len(row) == len(keys) + 1:
            yield row
