"""Shapes of the grouped-series and workspace endpoints (``views.workspaces``; docs/http-api.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from wisp._protocol import MAX_NAME_LENGTH
from wisp.server.schemas.runs import Id, Key, ProjectName

__all__ = [
    "Group",
    "GroupGrid",
    "GroupSeries",
    "GroupedBody",
    "GroupedSeries",
    "PanelSpec",
    "Workspace",
    "WorkspaceBody",
    "WorkspaceList",
    "WorkspacePath",
    "WorkspaceRow",
    "WorkspaceSpec",
]

Field = Annotated[str, Meta(min_length=1, max_length=1000)]
Filter = Annotated[str, Meta(max_length=4000, description="runs filter expression")]
GroupBy = Annotated[
    list[Field],
    Meta(
        max_length=5,
        description="group, job_type, state, name, tags, config.*, summary.*, metadata.*",
    ),
]
Stat = Literal["mean", "median", "std", "min", "max", "lo", "hi"]
STATS: tuple[Stat, ...] = ("mean", "median", "std", "min", "max", "lo", "hi")
WorkspaceId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


# -- grouped series ----------------------------------------------------------------------------


class GroupedBody(msgspec.Struct, forbid_unknown_fields=True):
    keys: Annotated[list[Key], Meta(min_length=1, max_length=20)]
    group_by: GroupBy = msgspec.field(default_factory=list)
    filter: Filter = ""
    runs: Annotated[list[Id], Meta(max_length=1000)] | None = None
    x: Literal["step"] = "step"
    min: float | None = None
    max: float | None = None
    buckets: Annotated[int, Meta(ge=1, le=5000)] = 1000
    stats: Annotated[
        list[Stat], Meta(max_length=7, description="the per-bucket arrays to send")
    ] = msgspec.field(default_factory=lambda: list(STATS))


class GroupSeries(msgspec.Struct):
    """One metric of one group, per bucket of the shared grid (x: the bucket's first step);
    the statistics asked for in ``stats`` (the others are left out)."""

    key: str
    runs: int
    x: list[int]
    n: list[int]
    mean: list[float | None] | None = None
    median: list[float | None] | None = None
    std: list[float | None] | None = None
    min: list[float | None] | None = None
    max: list[float | None] | None = None
    lo: list[float | None] | None = None
    hi: list[float | None] | None = None


class Group(msgspec.Struct):
    values: list[Any]
    label: str
    runs: list[str]
    names: list[str | None]
    series: list[GroupSeries]


# The step grid of a metric: bucket i holds the steps from origin + i * width on, or, with
# width 0, the steps s with (s - first) * buckets // (last - first + 1) == i (docs/http-api.md).
class GroupGrid(msgspec.Struct):
    key: str
    origin: int
    width: int
    first: int
    last: int


class GroupedSeries(msgspec.Struct):
    group_by: list[str]
    runs: int
    grids: list[GroupGrid]
    groups: list[Group]


# -- workspaces --------------------------------------------------------------------------------


class PanelSpec(msgspec.Struct, forbid_unknown_fields=True):
    """A chart panel: metrics, x axis, smoothing, log scale, y range and size."""

    id: WorkspaceId
    keys: Annotated[list[Key], Meta(min_length=1, max_length=20)]
    kind: Literal["line"] = "line"
    title: Annotated[str, Meta(max_length=MAX_NAME_LENGTH)] = ""
    x: Key = "step"
    smooth: Annotated[float, Meta(ge=0, le=0.99)] = 0.0
    smooth_mode: Literal["ema", "time"] = "ema"
    log_y: bool = False
    y_min: float | None = None
    y_max: float | None = None
    w: Annotated[int, Meta(ge=1, le=4, description="grid columns spanned")] = 1
    h: Annotated[int, Meta(ge=120, le=1200, description="height in pixels")] = 240


class WorkspaceSpec(msgspec.Struct, forbid_unknown_fields=True):
    panels: Annotated[list[PanelSpec], Meta(max_length=200)] = msgspec.field(default_factory=list)
    filter: Filter = ""
    group_by: GroupBy = msgspec.field(default_factory=list)
    agg: Literal["mean", "median"] = "mean"
    band: Literal["minmax", "std", "none"] = "minmax"
    runs: Annotated[list[Id], Meta(max_length=1000)] | None = None


class WorkspaceBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
    spec: WorkspaceSpec
    shared: bool = False


class WorkspaceRow(msgspec.Struct):
    id: str
    project: str
    name: str
    owner: str | None
    shared: bool
    created_at: float
    updated_at: float
    can_edit: bool


class Workspace(WorkspaceRow):
    spec: WorkspaceSpec


class WorkspaceList(msgspec.Struct):
    workspaces: list[WorkspaceRow]


class WorkspacePath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    workspace_id: WorkspaceId
