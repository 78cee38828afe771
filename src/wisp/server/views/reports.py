"""Reports on the server: every version kept, diff and revert, drawn from the project's runs.

- ``GET /projects/{project}/reports``: the project's reports.
- ``PUT /projects/{project}/reports/{id}``: a new version (the first creates the report; the
  text of the latest version again stores nothing, so a retried PUT is harmless).
- ``GET .../reports/{id}[?version=N]``, ``.../versions``, ``.../diff?a=&b=``,
  ``POST .../revert``, ``DELETE``.
- ``GET .../reports/{id}/data`` and ``.../html``: its panels' data, and the export page,
  computed from the project's runs (``wisp.reports``: the same code as the CLI's export).

Rights follow the project's (``_auth.RULES``): whoever reads the project reads its reports;
saving, reverting and deleting need write rights on it.  A report's file names its project:
it must be the project of the URL.
"""

from __future__ import annotations

import difflib
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from wisp.reports._source import MAX_INLINE_IMAGE, Media, Source, last_media
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import principal_of
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem, invalid
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import reports as T
from wisp.server.schemas.runs import ProjectRunsPath
from wisp.server.settings import ServerSettings
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_project
from wisp.server.store.reports import Conflict, ReportStore

__all__ = ["ReportApi", "StoreSource"]

_HTML = {"text/html": {"type": "string"}}
_JSON = {"application/json": {"type": "object"}}


def _parse(markdown: str, project: str) -> Any:
    """The report in ``markdown``, checked (422 naming the fault); its project must be
    ``project`` (absent, it is set to it)."""
    from wisp.errors import UsageError
    from wisp.reports._report import Report

    try:
        report = Report.from_markdown(markdown, "markdown")
    except UsageError as exc:
        raise invalid("markdown", str(exc).removeprefix("markdown: ")) from None
    if report.project and report.project != project:
        raise invalid(
            "markdown", f"front matter: project {report.project!r} is not this project {project!r}"
        )
    if not report.project:
        report.project = project
    return report


class StoreSource(Source):
    """``wisp.reports``' source of runs, read straight from the store (no HTTP)."""

    def __init__(self, store: Store, blobs: BlobStore) -> None:
        self.store = store
        self.blobs = blobs
        self.where = "server"

    def list_runs(self, project: str, filters: str) -> list[dict[str, Any]]:
        from wisp.server.query.runs import list_runs

        out: list[dict[str, Any]] = []
        while True:
            page = list_runs(
                self.store, project, filter_expr=filters, order="asc", limit=1000, offset=len(out)
            )
            out.extend(page["runs"])
            if not page["runs"] or len(out) >= page["total"]:
                return out

    def series(
        self, runs: list[dict[str, Any]], keys: list[str], x: str, hi: int | None, buckets: int
    ) -> dict[tuple[str, str], dict[str, list[Any]]]:
        from wisp.server.series.buckets import series
        from wisp.server.series.many import run_series

        by_key = {str(r["key"]): r["id"] for r in runs}
        if x == "step":  # every run's chunks in one pass per key
            many = run_series(self.store, list(by_key), keys, hi=hi, buckets=buckets)
            return {(by_key[r], k): s for (r, k), s in many.items()}
        got = series(self.store, list(by_key), keys, x=x, buckets=buckets)
        return {
            (by_key[s["run"]], s["key"]): {k: s[k] for k in ("x", "y", "min", "max")} for s in got
        }

    def metric_keys(self, run: dict[str, Any]) -> list[str]:
        from sqlalchemy import select

        from wisp.server.store import schema as S

        mk = S.metric_keys.c
        with self.store.engine.connect() as conn:
            return sorted(conn.execute(select(mk.key).where(mk.run_id == run["key"])).scalars())

    def grouped(
        self,
        runs: list[dict[str, Any]],
        keys: list[str],
        group: list[str],
        hi: int | None,
        buckets: int,
        agg: str,
        band: str,
    ) -> list[tuple[str, int, list[str], str, dict[str, list[Any]]]] | None:
        """The workspace page's grouped series (``series.grouped``): one pass over the runs'
        chunks, mean or median per group with its min/max or +-std band."""
        from wisp.reports._data import group_label
        from wisp.server.series.grouped import grouped_series

        by_key = {str(r["key"]): r["id"] for r in runs}
        stats = (agg, "std") if band == "std" else (agg, "min", "max")
        try:
            got = grouped_series(
                self.store,
                runs[0]["project"],
                keys=keys,
                group_by=group,
                runs=list(by_key),
                hi=hi,
                buckets=buckets,
                stats=stats,
            )
        except Problem:  # a field the grouped series does not group by (id): pooled instead
            return None
        out = []
        for g in got["groups"]:
            label = group_label(group, g["values"])
            members = [by_key.get(k, k) for k in g["runs"]]
            for s in g["series"]:
                y = s[agg]
                if band == "std":
                    lo = [
                        None if m is None or d is None else m - d
                        for m, d in zip(y, s["std"], strict=True)
                    ]
                    up = [
                        None if m is None or d is None else m + d
                        for m, d in zip(y, s["std"], strict=True)
                    ]
                else:
                    lo, up = s["min"], s["max"]
                line = {"x": s["x"], "y": y, "min": lo, "max": up}
                out.append((label, len(members), members, s["key"], line))
        return out

    def media(self, run: dict[str, Any], key: str, hi: int | None, want: int | None) -> Media:
        def fetch(sha: str, suffix: str) -> bytes | None:
            info = self.blobs.head(sha)
            if info is None or info.size > MAX_INLINE_IMAGE:
                return None
            with self.blobs.open(sha) as f:
                data: bytes = f.read()
            return data

        items = self.store.media_items(str(run["key"]), key, 100_000)
        return last_media(items, hi, want, fetch)

    def tail(self, run: dict[str, Any], keys: list[str], start: int) -> int | None:
        from wisp.server.series.buckets import series

        fine = series(self.store, [run["key"]], keys, lo=start, buckets=100_000)
        return max((int(s["x"][-1]) for s in fine if s["x"]), default=None)


class ReportApi:
    """The reports of a project and their versions."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store
        self.blobs = blobs
        self.reports = ReportStore(store.db)

    def _need(self, project: str, rid: str, version: int | None = None) -> dict[str, Any]:
        got = self.reports.get(project, rid, version)
        if got is None:
            what = f"report {rid!r}" + (f" version {version}" if version is not None else "")
            raise Problem(404, "report_not_found", f"no {what} in {project!r}", "report_id")
        return got

    def _save(self, r: In, project: str, rid: str, markdown: str, base: int | None) -> Any:
        report = _parse(markdown, project)
        p = principal_of(r.request)
        author = (p.user_id, p.name or p.via)

        def check(conn: Any) -> None:
            if p.via != "local":  # a new project is created as a first run creates it
                self.store.access.on_create(conn, {"project": project})

        def save() -> dict[str, Any]:
            try:
                version, created = self.reports.save(
                    project, rid, markdown, report.title, author, base, check
                )
            except Conflict as c:
                raise Problem(
                    409,
                    "conflict",
                    f"report {rid!r} is at version {c.latest}, not {base}: pull it, merge, push",
                    "base",
                ) from None
            return {**self._need(project, rid, version), "created": created}

        return run_in_threadpool(save)

    @endpoint(
        "GET",
        "/projects/{project}/reports",
        scope="read",
        summary="The reports of a project, most recently changed first",
        path_params=ProjectRunsPath,
        responses={200: T.ReportList},
    )
    async def list_reports(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        rows = await run_in_threadpool(self.reports.of_project, project)
        return json_response({"reports": rows})

    @endpoint(
        "PUT",
        "/projects/{project}/reports/{report_id}",
        scope="write",
        summary="Save a new version of a report (created when absent; unchanged text: no "
        "new version)",
        path_params=T.ReportPath,
        body=T.ReportBody,
        responses={200: T.ReportDoc},
    )
    async def put_report(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        b: T.ReportBody = r.body
        doc = await self._save(r, project, path.report_id, b.markdown, b.base)
        return json_response(doc)

    @endpoint(
        "GET",
        "/projects/{project}/reports/{report_id}",
        scope="read",
        summary="One version of a report (the latest unless ?version=N), its Markdown included",
        path_params=T.ReportPath,
        query=T.VersionQuery,
        responses={200: T.ReportDoc},
    )
    async def get_report(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        q: T.VersionQuery = r.query
        return json_response(
            await run_in_threadpool(self._need, project, path.report_id, q.version)
        )

    @endpoint(
        "GET",
        "/projects/{project}/reports/{report_id}/versions",
        scope="read",
        summary="Every version of a report: who saved it and when",
        path_params=T.ReportPath,
        responses={200: T.VersionList},
    )
    async def report_versions(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        await run_in_threadpool(self._need, project, path.report_id)
        rows = await run_in_threadpool(self.reports.versions, project, path.report_id)
        return json_response({"versions": rows})

    @endpoint(
        "GET",
        "/projects/{project}/reports/{report_id}/diff",
        scope="read",
        summary="A unified diff between two versions of a report",
        path_params=T.ReportPath,
        query=T.DiffQuery,
        responses={200: T.ReportDiff},
    )
    async def report_diff(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        q: T.DiffQuery = r.query
        a = await run_in_threadpool(self._need, project, path.report_id, q.a)
        b = await run_in_threadpool(self._need, project, path.report_id, q.b)
        lines = difflib.unified_diff(
            a["markdown"].splitlines(keepends=True),
            b["markdown"].splitlines(keepends=True),
            f"{path.report_id} v{q.a}",
            f"{path.report_id} v{q.b}",
        )
        return json_response({"a": q.a, "b": q.b, "diff": "".join(lines)})

    @endpoint(
        "POST",
        "/projects/{project}/reports/{report_id}/revert",
        scope="write",
        summary="Save an old version's text as the newest version",
        path_params=T.ReportPath,
        body=T.RevertBody,
        responses={200: T.ReportDoc},
    )
    async def revert_report(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        b: T.RevertBody = r.body
        old = await run_in_threadpool(self._need, project, path.report_id, b.version)
        doc = await self._save(r, project, path.report_id, old["markdown"], None)
        return json_response(doc)

    @endpoint(
        "DELETE",
        "/projects/{project}/reports/{report_id}",
        scope="write",
        summary="Delete a report and every version of it",
        path_params=T.ReportPath,
        responses={200: T.ReportDoc},
    )
    async def delete_report(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        doc = await run_in_threadpool(self._need, project, path.report_id)
        await run_in_threadpool(self.reports.delete, project, path.report_id)
        return json_response(doc)

    def _drawn(
        self, project: str, rid: str, version: int | None, limit: int | None = None
    ) -> tuple[Any, dict[str, Any]]:
        from wisp.reports._data import resolve

        doc = self._need(project, rid, version)
        report = _parse(doc["markdown"], project)
        return report, resolve(report, StoreSource(self.store, self.blobs), limit)

    @endpoint(
        "GET",
        "/projects/{project}/reports/{report_id}/data",
        scope="read",
        summary="Each panel's data, from the project's runs (as the export draws it)",
        path_params=T.ReportPath,
        query=T.DrawQuery,
        responses={200: _JSON},
    )
    async def report_data(self, r: In) -> Response:
        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        q: T.DrawQuery = r.query
        _, data = await run_in_threadpool(self._drawn, project, path.report_id, q.version, q.panels)
        return json_response(data)

    @endpoint(
        "GET",
        "/projects/{project}/reports/{report_id}/html",
        scope="read",
        summary="The report as one self-contained HTML page (charts drawn, data inlined)",
        path_params=T.ReportPath,
        query=T.DrawQuery,
        responses={200: _HTML},
    )
    async def report_html(self, r: In) -> Response:
        from wisp.reports._html import render

        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        q: T.DrawQuery = r.query
        report, data = await run_in_threadpool(
            self._drawn, project, path.report_id, q.version, q.panels
        )
        page = await run_in_threadpool(render, report, data)
        return Response(page, media_type="text/html; charset=utf-8")

    @endpoint(
        "POST",
        "/projects/{project}/reports/{report_id}/freeze",
        scope="write",
        summary="Pin every run set to the runs it selects now and their last step (a new version)",
        path_params=T.ReportPath,
        responses={200: T.ReportDoc},
    )
    async def freeze_report(self, r: In) -> Response:
        from wisp.reports._data import freeze

        path: T.ReportPath = r.path
        project = check_project(path.project, "project")
        doc = await run_in_threadpool(self._need, project, path.report_id)

        def pinned() -> str:
            report = _parse(doc["markdown"], project)
            freeze(report, StoreSource(self.store, self.blobs))
            return str(report.markdown)

        markdown = await run_in_threadpool(pinned)
        return json_response(await self._save(r, project, path.report_id, markdown, None))

    @endpoint(
        "POST",
        "/projects/{project}/report-preview",
        scope="read",
        summary="A report's Markdown drawn as HTML from the project's runs, not saved",
        path_params=ProjectRunsPath,
        body=T.PreviewBody,
        responses={200: _HTML},
    )
    async def preview_report(self, r: In) -> Response:
        from wisp.reports._data import resolve
        from wisp.reports._html import render

        project = check_project(r.path.project, "project")
        b: T.PreviewBody = r.body

        def draw() -> str:
            report = _parse(b.markdown, project)
            return render(report, resolve(report, StoreSource(self.store, self.blobs)))

        page = await run_in_threadpool(draw)
        return Response(page, media_type="text/html; charset=utf-8")
