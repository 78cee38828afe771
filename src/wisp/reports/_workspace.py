"""A saved workspace is a report without prose: stored in the report's panel model.

The workspace API keeps its shape (``server/schemas/workspaces.WorkspaceSpec``: panels of
metric keys, a filter or run ids, group-by fields, an aggregate and a band); what the server
stores in ``workspaces.spec`` is the report's model of the same view (docs/reports.md,
"Workspaces")::

    {"report": 1, "runsets": {"workspace": {filter, runs, group}},
     "panels": [{type: line, runset: workspace, y, x, smooth, ..., id, w, h, agg, band}],
     "agg": "mean", "band": "minmax"}

Every panel is a report ``line`` panel, checked by the report's rules (``_panels``) and
converted by ``Panel.from_workspace`` / ``Panel.to_workspace``, so there is one panel model.
``agg`` and ``band`` are the workspace's, kept on each panel (as a report's line panel has
them) and beside the panels (a workspace without panels keeps them too).  Rows saved before
this model (migration ``0014_workspaces_as_reports`` converts them) are read as they are.
"""

from __future__ import annotations

from typing import Any

from wisp.reports._panels import Panel, RunSet, check_runset

__all__ = ["RUNSET", "STORED_VERSION", "from_stored", "to_stored"]

STORED_VERSION = 1
RUNSET = "workspace"  # the one run set of a workspace's report


def _runset(spec: dict[str, Any]) -> RunSet:
    raw: dict[str, Any] = {}
    if spec.get("filter"):
        raw["filter"] = spec["filter"]
    if spec.get("runs") is not None:
        raw["runs"] = list(spec["runs"])
    if spec.get("group_by"):
        raw["group"] = list(spec["group_by"])
    return check_runset(raw, "spec")


def _panel(p: dict[str, Any], agg: str, band: str) -> dict[str, Any]:
    panel = Panel.from_workspace(p)
    panel.runset = RUNSET
    return {**panel.to_yaml(), "agg": agg, "band": band}


def to_stored(spec: dict[str, Any]) -> dict[str, Any]:
    """A workspace spec (JSON of ``WorkspaceSpec``) as the stored report model, through the
    report's checks (``UsageError`` naming the field)."""
    agg, band = spec.get("agg", "mean"), spec.get("band", "minmax")
    return {
        "report": STORED_VERSION,
        "runsets": {RUNSET: _runset(spec).to_yaml()},
        "panels": [_panel(p, agg, band) for p in spec.get("panels", [])],
        "agg": agg,
        "band": band,
    }


def from_stored(doc: dict[str, Any]) -> dict[str, Any]:
    """The workspace spec (``WorkspaceSpec`` JSON) of a stored document; a row stored before
    the report model is returned unchanged."""
    if doc.get("report") != STORED_VERSION:
        return doc
    rs = doc.get("runsets", {}).get(RUNSET, {})
    group = rs.get("group", [])
    panels = []
    for i, p in enumerate(doc.get("panels", [])):
        line = {k: v for k, v in p.items() if k not in ("agg", "band", "runset")}
        panels.append(Panel.from_yaml(line, f"panel {i + 1}").to_workspace(f"p{i + 1}"))
    return {
        "panels": panels,
        "filter": rs.get("filter", ""),
        "group_by": [group] if isinstance(group, str) else list(group),
        "agg": doc.get("agg", "mean"),
        "band": doc.get("band", "minmax"),
        "runs": rs.get("runs"),
    }
