"""``wisp.Report``: a report file read, built, checked, frozen and exported from Python.

    r = wisp.Report(title="LR sweep", project="spiral")
    r.add_runset("sweep", filter="config.lr > 1e-4", group="config.lr")
    r.add_text("Warm-up above 3e-4 diverges.")
    r.add_panel("line", runset="sweep", y=["val/loss"], band="minmax")
    r.save("lr.md")
    r = wisp.Report.load("lr.md"); r.freeze(); r.save("lr.md")

The file format is ``_format`` (version 1), the panels and run sets ``_panels``.
"""

from __future__ import annotations

import os
from typing import Any

from wisp._protocol import (
    MAX_REPORT_BYTES,
    MAX_REPORT_PANELS,
    MAX_RUNSETS,
    name_problem,
    project_problem,
)
from wisp.errors import UsageError
from wisp.reports._format import FORMAT_VERSION, Document, PanelBlock, TextBlock, parse
from wisp.reports._panels import Panel, RunSet, check_runset

__all__ = ["Report"]

_META_FIELDS = ("wisp-report", "title", "project", "description", "runsets")


def _api(api: Any) -> Any:
    if api is None:
        from wisp.api import Api

        return Api()
    if isinstance(api, str | os.PathLike):
        from wisp.api import Api

        return Api(dir=api)
    return api


class Report:
    """A report: front matter (title, project, run sets) and Markdown with panels."""

    def __init__(self, title: str = "", project: str = "", description: str | None = None) -> None:
        meta: dict[str, Any] = {"wisp-report": FORMAT_VERSION, "title": title, "project": project}
        if description:
            meta["description"] = description
        meta["runsets"] = {}
        self._doc = Document(meta=meta)
        self.runsets: dict[str, RunSet] = {}
        self._panels: list[tuple[PanelBlock, Panel]] = []
        self._check_meta("report")

    # -- reading and writing -------------------------------------------------------------------

    @classmethod
    def from_markdown(cls, text: str, source: str = "report") -> Report:
        """The report in ``text``; UsageError naming the line and field of what is wrong."""
        if len(text.encode("utf-8", "surrogatepass")) > MAX_REPORT_BYTES:
            raise UsageError(f"{source}: over {MAX_REPORT_BYTES} bytes, the limit of a report")
        self = cls.__new__(cls)
        self._doc = parse(text, source)
        self.runsets = {}
        self._panels = []
        self._check_meta(source)
        for block in self._doc.blocks:
            if isinstance(block, PanelBlock):
                where = f"{source}: line {block.line}: panel {len(self._panels) + 1}"
                panel = Panel.from_yaml(block.spec, where)
                self._check_panel(panel, where)
                self._panels.append((block, panel))
        return self

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Report:
        """The report in the file ``path``."""
        with open(path, encoding="utf-8") as f:
            return cls.from_markdown(f.read(), os.fspath(path))

    @property
    def markdown(self) -> str:
        """The report file's text."""
        return self._doc.text()

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the report to ``path`` (atomically); returns the path."""
        path = os.fspath(path)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(self.markdown)
        os.replace(tmp, path)
        return path

    def _check_meta(self, source: str) -> None:
        meta = self._doc.meta
        unknown = [k for k in meta if k not in _META_FIELDS]
        if unknown:
            raise UsageError(
                f"{source}: front matter: {unknown[0]}: unknown field "
                f"(fields: {', '.join(_META_FIELDS)})"
            )
        for name in ("title", "description"):
            v = meta.get(name)
            if v is not None and (not isinstance(v, str) or name_problem(v) is not None):
                raise UsageError(f"{source}: front matter: {name}: expected text, got {v!r}")
        project = meta.get("project")
        if project not in ("", None):
            problem = project_problem(project) if isinstance(project, str) else "must be text"
            if problem is not None:
                raise UsageError(f"{source}: front matter: project {problem}")
        sets = meta.get("runsets") or {}
        if not isinstance(sets, dict) or len(sets) > MAX_RUNSETS:
            raise UsageError(
                f"{source}: front matter: runsets: expected a mapping of at most {MAX_RUNSETS} "
                "names to run sets"
            )
        self.runsets = {
            str(n): check_runset(v, f"{source}: front matter: runsets.{n}") for n, v in sets.items()
        }

    def _check_panel(self, panel: Panel, where: str) -> None:
        if len(self._panels) >= MAX_REPORT_PANELS:
            raise UsageError(f"{where}: a report holds at most {MAX_REPORT_PANELS} panels")
        if panel.type == "markdown" or panel.runs is not None:
            return
        if panel.runset is None and not self.runsets:
            raise UsageError(
                f"{where}: runset: this panel needs runs: define a run set in the front "
                "matter's runsets, or give the panel runs: (a filter or run ids)"
            )
        if panel.runset is not None and panel.runset not in self.runsets:
            names = ", ".join(self.runsets) or "none defined"
            raise UsageError(f"{where}: runset: {panel.runset!r} is not a run set ({names})")

    # -- what it holds -------------------------------------------------------------------------

    @property
    def title(self) -> str:
        return str(self._doc.meta.get("title") or "")

    @property
    def project(self) -> str:
        """The project whose runs the run sets select."""
        return str(self._doc.meta.get("project") or "")

    @project.setter
    def project(self, name: str) -> None:
        problem = project_problem(name) if isinstance(name, str) else "must be text"
        if problem is not None:
            raise UsageError(f"project {problem}")
        self._doc.meta["project"] = name
        self._doc.raw_meta = None

    @property
    def description(self) -> str:
        return str(self._doc.meta.get("description") or "")

    @property
    def panels(self) -> list[Panel]:
        return [p for _, p in self._panels]

    @property
    def blocks(self) -> list[TextBlock | Panel]:
        """The body in order: Markdown text and panels."""
        out: list[TextBlock | Panel] = []
        panels = iter(self.panels)
        for b in self._doc.blocks:
            out.append(b if isinstance(b, TextBlock) else next(panels))
        return out

    def panel_line(self, index: int) -> int:
        """The line of the file where panel ``index`` (0-based) starts (0: not from a file)."""
        return self._panels[index][0].line

    def default_runset(self) -> str:
        """The run set of a panel that names none: the first one in the front matter."""
        return next(iter(self.runsets))

    def __repr__(self) -> str:
        return f"<wisp.Report {self.title!r} project={self.project!r} panels={len(self._panels)}>"

    # -- building ------------------------------------------------------------------------------

    def add_runset(
        self,
        name: str,
        filter: str | None = None,  # noqa: A002 - the format's name
        runs: list[str] | None = None,
        group: str | list[str] | None = None,
    ) -> RunSet:
        """Define (or replace) the run set ``name``: a filter, run ids, and grouping."""
        spec: dict[str, Any] = {"filter": filter, "runs": runs, "group": group}
        rs = check_runset({k: v for k, v in spec.items() if v is not None}, f"runset {name}")
        if name not in self.runsets and len(self.runsets) >= MAX_RUNSETS:
            raise UsageError(f"runset {name}: a report holds at most {MAX_RUNSETS} run sets")
        self.runsets[name] = rs
        self.touch_runsets()
        return rs

    def add_text(self, markdown: str) -> None:
        """Append Markdown (a paragraph break is added around it)."""
        if not isinstance(markdown, str):
            raise UsageError(f"add_text() takes Markdown text, got {type(markdown).__name__}")
        self._separate()
        self._doc.blocks.append(TextBlock(markdown.rstrip("\n") + "\n"))

    def add_panel(
        self,
        type: str,  # noqa: A002 - the format's name
        runset: str | None = None,
        runs: str | list[str] | dict[str, Any] | None = None,
        title: str = "",
        **options: Any,
    ) -> Panel:
        """Append a panel (``type``: line, bar, scalar, scatter, parallel, compare, media,
        runs, markdown; options as in docs/reports.md); returns it."""
        spec: dict[str, Any] = {"type": type}
        if title:
            spec["title"] = title
        if runset is not None:
            spec["runset"] = runset
        if runs is not None:
            spec["runs"] = runs
        spec.update(options)
        where = f"panel {len(self._panels) + 1}"
        panel = Panel.from_yaml(spec, where)
        self._check_panel(panel, where)
        self._separate()
        block = PanelBlock(panel.to_yaml())
        self._doc.blocks.append(block)
        self._panels.append((block, panel))
        return panel

    def _separate(self) -> None:
        if self._doc.blocks:
            self._doc.blocks.append(TextBlock("\n"))

    def touch_runsets(self) -> None:
        """Write the run sets anew into the front matter and inline panels (after a change)."""
        self._doc.meta["runsets"] = {n: rs.to_yaml() for n, rs in self.runsets.items()}
        self._doc.raw_meta = None
        for block, panel in self._panels:
            if panel.runs is not None:
                block.spec = panel.to_yaml()
                block.raw = None

    # -- against runs --------------------------------------------------------------------------

    def _source(self, api: Any) -> Any:
        from wisp.reports._source import source_of

        if not self.project:
            raise UsageError("this report names no project: set project in its front matter")
        return source_of(_api(api))

    def lint(self, api: Any = None) -> list[Any]:
        """What is wrong with the run sets and keys against the runs they select
        (``api``: a ``wisp.Api``, a folder of local runs, or None for ``wisp.Api()``)."""
        from wisp.reports._data import lint

        return lint(self, self._source(api))

    def freeze(self, api: Any = None, again: bool = False) -> list[str]:
        """Pin every run set to the runs it selects now and their last step, so the report
        never changes underneath its readers; ``again`` re-selects frozen run sets by their
        filters.  Returns a line per run set frozen."""
        from wisp.reports._data import freeze

        return freeze(self, self._source(api), again)

    def data(self, api: Any = None) -> dict[str, Any]:
        """Each panel's data as drawn (JSON-able: docs/reports.md, "Panel data")."""
        from wisp.reports._data import resolve

        return resolve(self, self._source(api))

    def export_html(self, path: str | os.PathLike[str], api: Any = None) -> str:
        """Write one self-contained HTML file (data inlined, charts drawn; no network)."""
        from wisp.reports._html import render

        html = render(self, self.data(api))
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(html)
        return path
