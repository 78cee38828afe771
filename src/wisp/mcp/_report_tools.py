"""The agent tools over reports (docs/reports.md): create one, append a panel, freeze it.

Reports live on a server (every version kept); over a local folder these tools answer
with the reason.  Each edit is a new version pushed with ``base`` = the version read, so an
edit made meanwhile by someone else is refused (409), never overwritten.
"""

from __future__ import annotations

from typing import Any

from wisp.errors import UsageError

__all__ = ["add_report_panel", "create_report", "freeze_report"]


def _need_server(api: Any) -> None:
    if getattr(api, "server_url", None) is None:
        raise UsageError(
            "reports live on a server: start wisp mcp with --server (or use `wisp report` "
            "files in your repository)"
        )


def _ref(ref: Any) -> dict[str, Any]:
    return {"project": ref.project, "id": ref.id, "version": ref.version, "title": ref.title}


def create_report(api: Any, project: str, title: str, text: str = "") -> dict[str, Any]:
    """A new report in ``project`` with ``title`` and an opening paragraph (Markdown)."""
    from wisp.reports import Report

    _need_server(api)
    report = Report(title=title, project=project)
    if text:
        report.add_text(text)
    return _ref(api.push_report(report, project))


def add_report_panel(
    api: Any,
    report: str,
    type: str,  # noqa: A002 - the panel's type, as in the file format
    y: list[str] | None = None,
    runs: str | list[str] | None = None,
    runset: str | None = None,
    title: str = "",
    x: str | None = None,
) -> dict[str, Any]:
    """Append a panel to report ``"project/ID"`` and save it as a new version."""
    from wisp.reports import Report
    from wisp.reports._client import get

    _need_server(api)
    ref = get(api, report)
    doc = Report.from_markdown(ref.markdown, f"{ref.project}/{ref.id} v{ref.version}")
    options: dict[str, Any] = {}
    if y is not None:
        options["y"] = list(y)
    if x is not None:
        options["x"] = x
    if runs is None and runset is None:
        if not doc.runsets:
            doc.add_runset("all")  # every run of the project
        runset = doc.default_runset()
    doc.add_panel(type, runset=runset, runs=runs, title=title, **options)
    return _ref(api.push_report(doc, ref.project, id=ref.id, base=ref.version))


def freeze_report(api: Any, report: str) -> dict[str, Any]:
    """Pin each run set of report ``"project/ID"`` to its runs and steps now, as a new
    version, so the report no longer changes when runs arrive."""
    from wisp.reports import Report
    from wisp.reports._client import get

    _need_server(api)
    ref = get(api, report)
    doc = Report.from_markdown(ref.markdown, f"{ref.project}/{ref.id} v{ref.version}")
    frozen = doc.freeze(api)
    out = _ref(api.push_report(doc, ref.project, id=ref.id, base=ref.version))
    out["frozen"] = frozen
    return out
