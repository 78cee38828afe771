"""Reports on a wisp server: push a new version, pull, list versions, diff, revert.

HTTP (docs/http-api.md, "Reports"), under ``/api/v1`` and the project's path
(``/projects/{p}`` or ``/entities/{e}/projects/{p}``)::

    GET  {project}/reports                          the project's reports (latest versions)
    PUT  {project}/reports/{id}                     {markdown, base?}: a new version (created
                                                    when absent; the same text as the latest
                                                    version makes none, so retries are safe;
                                                    base != the latest version: 409)
    GET  {project}/reports/{id}[?version=N]         one version, markdown included
    GET  {project}/reports/{id}/versions            every version: who, when, size
    GET  {project}/reports/{id}/diff?a=N&b=M        unified diff between two versions
    POST {project}/reports/{id}/revert              {version}: its text as a new version
    DELETE {project}/reports/{id}

``wisp.Api().report("project/ID")`` returns a :class:`ReportRef`.
"""

from __future__ import annotations

import secrets
from typing import Any

from wisp._protocol import project_path
from wisp.errors import FatalApiError, NotFoundError, UsageError

__all__ = ["ReportRef", "new_id", "reports_of", "split_path"]

_ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


def new_id() -> str:
    """A fresh report id: 10 characters of a-z0-9 (chosen by the client: PUT is idempotent)."""
    return "".join(secrets.choice(_ID_CHARS) for _ in range(10))


def split_path(path: str) -> tuple[str, str]:
    """``("entity/project" | "project", id)`` from ``"[entity/]project/id"``."""
    if not isinstance(path, str) or path.count("/") not in (1, 2):
        raise UsageError(f"report() needs 'project/ID' or 'entity/project/ID', got {path!r}")
    project, _, rid = path.strip("/").rpartition("/")
    if not project or not rid:
        raise UsageError(f"report() needs 'project/ID' or 'entity/project/ID', got {path!r}")
    return project, rid


def _http(api: Any) -> Any:
    http = getattr(api._backend, "http", None)
    if http is None:
        raise UsageError(
            "reports are kept on a server: wisp.Api(server_url=...) (locally, a report is a "
            "file: wisp.Report.load(path))"
        )
    return http


def _call(http: Any, method: str, path: str, what: str, **kw: Any) -> dict[str, Any]:
    try:
        out: dict[str, Any] = http.json(method, path, **kw)
    except FatalApiError as exc:
        if exc.status == 404:
            raise NotFoundError(f"{what} not found on {http.server_url}", status=404) from None
        raise
    return out


class ReportRef:
    """One version of a report kept on a server (``markdown``, ``version``, ``author``...)."""

    def __init__(self, api: Any, project: str, doc: dict[str, Any]) -> None:
        self._api = api
        self.project = project
        self.id: str = doc["id"]
        self.version: int = int(doc["version"])
        self.title: str = doc.get("title") or ""
        self.markdown: str = doc.get("markdown") or ""
        self.author: str | None = doc.get("author")
        self.created_at: float = float(doc.get("created_at") or 0.0)

    def __repr__(self) -> str:
        return f"<ReportRef {self.project}/{self.id} v{self.version} {self.title!r}>"

    @property
    def _base(self) -> str:
        return f"{project_path(self.project)}/reports/{self.id}"

    @property
    def report(self) -> Any:
        """This version parsed: a ``wisp.Report``."""
        from wisp.reports._report import Report

        return Report.from_markdown(self.markdown, f"{self.project}/{self.id} v{self.version}")

    def versions(self) -> list[dict[str, Any]]:
        """Every version, oldest first: ``{version, author, created_at, title, bytes}``."""
        doc = _call(_http(self._api), "GET", f"{self._base}/versions", f"report {self.id!r}")
        return list(doc.get("versions", []))

    def at(self, version: int) -> ReportRef:
        """Version ``version`` of this report."""
        doc = _call(
            _http(self._api), "GET", self._base, f"version {version}", query={"version": version}
        )
        return ReportRef(self._api, self.project, doc)

    def diff(self, a: int, b: int) -> str:
        """A unified diff from version ``a`` to version ``b``."""
        q = {"a": a, "b": b}
        doc = _call(_http(self._api), "GET", f"{self._base}/diff", "versions", query=q)
        return str(doc.get("diff", ""))

    def revert(self, version: int) -> ReportRef:
        """Make version ``version``'s text the newest version (history is kept)."""
        body = {"version": version}
        doc = _call(_http(self._api), "POST", f"{self._base}/revert", "version", body=body)
        return ReportRef(self._api, self.project, doc)

    def delete(self) -> None:
        _call(_http(self._api), "DELETE", self._base, f"report {self.id!r}")


def push(
    api: Any, project: str, markdown: str, report_id: str | None = None, base: int | None = None
) -> ReportRef:
    """Upload ``markdown`` as a new version of report ``report_id`` (a new report when None)."""
    from wisp.reports._report import Report

    Report.from_markdown(markdown, "report")  # refuse a broken file before it travels
    rid = report_id or new_id()
    body: dict[str, Any] = {"markdown": markdown}
    if base is not None:
        body["base"] = base
    path = f"{project_path(project)}/reports/{rid}"
    doc = _call(_http(api), "PUT", path, f"project {project!r}", body=body)
    return ReportRef(api, project, doc)


def get(api: Any, path: str, version: int | None = None) -> ReportRef:
    """The report at ``"project/ID"`` (its latest version unless ``version``)."""
    project, rid = split_path(path)
    q = {"version": version} if version is not None else None
    doc = _call(
        _http(api), "GET", f"{project_path(project)}/reports/{rid}", f"report {path!r}", query=q
    )
    return ReportRef(api, project, doc)


def reports_of(api: Any, project: str) -> list[dict[str, Any]]:
    """A project's reports: ``{id, title, version, author, updated_at}``, newest first."""
    doc = _call(_http(api), "GET", f"{project_path(project)}/reports", f"project {project!r}")
    return list(doc.get("reports", []))
