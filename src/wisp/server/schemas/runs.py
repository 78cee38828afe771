"""The shapes of API v1, declared once as msgspec Structs.

Path, query and body types are what the handlers decode requests through (a
mismatch is a 422 naming the field, see ``server.http.routes``); response types document
what the handlers return.  ``server.http.openapi`` turns all of them into the OpenAPI
document, and the dashboard's TypeScript types are generated from that document
(``web/src/api.gen.ts``).  Limits come from ``wisp._protocol``.

The request bodies the SDK sends are also declared, standard library only, in
``wisp._wire``; ``tests/server/test_types.py`` checks both declarations agree.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from wisp._protocol import (
    ID_PATTERN,
    MAX_KEY_LENGTH,
    MAX_NAME_LENGTH,
    MAX_NOTES_LENGTH,
    MAX_PROJECT_LENGTH,
    MAX_SEQ,
    MAX_STEP,
    MAX_TAG_LENGTH,
    MAX_TAGS,
)

__all__ = [
    "Ack",
    "ConsoleLine",
    "ConsolePage",
    "ConsoleQuery",
    "ErrorBody",
    "ErrorDetail",
    "FilterParsed",
    "FilterQuery",
    "HistoryQuery",
    "MediaItem",
    "MediaList",
    "MediaListQuery",
    "MediaPath",
    "MediaStored",
    "MetricSpec",
    "Ok",
    "Project",
    "ProjectList",
    "ProjectRunPath",
    "ProjectRunsPath",
    "RecordIn",
    "RecordsBody",
    "RunBody",
    "RunDetail",
    "RunPath",
    "RunPut",
    "RunRow",
    "RunsPage",
    "RunsQuery",
    "SeqConflict",
    "Series",
    "SeriesList",
    "SeriesQuery",
    "WriterPath",
]

RunState = Literal["running", "finished", "failed", "killed", "crashed"]
Id = Annotated[str, Meta(pattern=f"^{ID_PATTERN}$")]
ProjectName = Annotated[str, Meta(min_length=1, max_length=MAX_PROJECT_LENGTH)]
Name = Annotated[str, Meta(max_length=MAX_NAME_LENGTH)]
Key = Annotated[str, Meta(max_length=MAX_KEY_LENGTH)]
Sha = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}(\.[A-Za-z0-9]{1,10})?$")]
Json = dict[str, Any]
Tags = Annotated[list[Annotated[str, Meta(max_length=MAX_TAG_LENGTH)]], Meta(max_length=MAX_TAGS)]

# -- path parameters ---------------------------------------------------------------------------


class RunPath(msgspec.Struct, forbid_unknown_fields=True):
    run_id: Id


class WriterPath(msgspec.Struct, forbid_unknown_fields=True):
    run_id: Id
    writer_id: Id


class MediaPath(msgspec.Struct, forbid_unknown_fields=True):
    sha256: Sha


class ProjectRunsPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName


class ProjectRunPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    run_id: Id


# -- query parameters (unknown parameters are ignored) -----------------------------------------


class RunsQuery(msgspec.Struct):
    filter: Annotated[str, Meta(max_length=4000, description="runs filter expression")] = ""
    sort: Annotated[str, Meta(max_length=1000)] = "created_at"
    order: Literal["asc", "desc"] = "desc"
    limit: Annotated[int, Meta(ge=1, le=1000)] = 50
    offset: Annotated[int, Meta(ge=0, le=1_000_000_000)] = 0
    group: Name | None = None


class FilterQuery(msgspec.Struct):
    filter: Annotated[str, Meta(max_length=4000)] = ""


class SeriesQuery(msgspec.Struct):
    runs: Annotated[str, Meta(max_length=4000, description="comma-separated run ids")]
    keys: Annotated[str, Meta(max_length=100_000, description="comma-separated metric keys")]
    x: Key = "step"
    min: float | None = None
    max: float | None = None
    after: float | None = None
    buckets: Annotated[int, Meta(ge=1, le=100_000)] = 1000


class HistoryQuery(msgspec.Struct):
    format: Literal["csv", "jsonl"] = "jsonl"
    keys: Annotated[str, Meta(max_length=100_000)] | None = None


class MediaListQuery(msgspec.Struct):
    key: Key | None = None
    limit: Annotated[int, Meta(ge=1, le=100_000)] = 10_000


class ConsoleQuery(msgspec.Struct):
    after: Annotated[int, Meta(ge=-1, le=MAX_STEP)] = -1
    limit: Annotated[int, Meta(ge=1, le=10_000)] = 1000


# -- request bodies ----------------------------------------------------------------------------


class RunBody(msgspec.Struct, forbid_unknown_fields=True):
    """``PUT /runs/{run_id}``: every field optional; a new run needs ``project``."""

    project: ProjectName | None = None
    name: Name | None = None
    tags: Tags | None = None
    notes: Annotated[str, Meta(max_length=MAX_NOTES_LENGTH)] | None = None
    group: Name | None = None
    job_type: Name | None = None
    config: Json | None = None
    metadata: Json | None = None
    state: RunState | None = None
    created_at: float | None = None
    #: the path names the run by ``project`` and its id (unique per project) and the client
    #: addresses it by the answer's ``key`` from then on; without it the path is the run's key
    #: and a run with this id in another project is a 409 (clients from before run keys)
    by_project: bool | None = None


class RecordIn(msgspec.Struct):
    """One run-file record: its type code and JSON payload (docs/run-file.md)."""

    type: Annotated[int, Meta(ge=0, le=255)]
    data: Json


class RecordsBody(msgspec.Struct):
    """``POST /runs/{run_id}/records``: record ``i`` has sequence ``first_seq + i``."""

    writer_id: Id
    first_seq: Annotated[int, Meta(ge=0, lt=MAX_SEQ)]
    records: list[RecordIn]


# -- responses ---------------------------------------------------------------------------------


class ErrorDetail(msgspec.Struct, omit_defaults=True):
    code: str
    message: str
    field: str | None = None


class ErrorBody(msgspec.Struct):
    """Every 4xx answer: ``{"error": {"code", "message", "field"}}``."""

    error: ErrorDetail


class SeqConflict(msgspec.Struct):
    """409 on ``POST /records``: resume from ``acked_seq + 1``."""

    error: ErrorDetail
    acked_seq: int


class RunRow(msgspec.Struct):
    #: the id the client chose: unique per project
    id: str
    #: the server's run key, unique on the server: what ``/runs/{run_id}`` paths name (equal
    #: to ``id`` unless another project had a run with that id first)
    key: str
    project: str
    name: str | None
    state: RunState
    tags: list[str]
    group: str | None
    job_type: str | None
    notes: str | None
    created_at: float
    finished_at: float | None
    duration: float
    exit_code: int | None
    heartbeat_at: float
    config: Json
    summary: Json


class MetricSpec(msgspec.Struct):
    """``wisp.define_metric()``: the payload of a METRIC record, checked at ingestion."""

    open_members: ClassVar[bool] = True
    name: Key
    step_metric: Key | None = None
    summary: Annotated[str, Meta(max_length=MAX_NAME_LENGTH)] | None = None
    hidden: bool | None = None


class RunDetail(RunRow):
    metadata: Json
    metric_keys: list[str]
    #: the keys of logged media (images, histograms, tables...) and their type
    media_keys: dict[str, str]
    metrics: list[MetricSpec]
    #: records the run's uploader set aside because the server refused them (422)
    rejected: int = 0


class RunPut(msgspec.Struct):
    run: RunRow
    #: what the server holds of each of the run's writers: ``{writer_id: acked seq}`` (a
    #: client checks its saved cursor against it)
    writers: dict[str, int] = {}


class Ack(msgspec.Struct):
    acked_seq: int
    stop: bool = False  # someone asked the run to stop (POST /runs/{run_id}/stop)


class Ok(msgspec.Struct):
    ok: bool


class Alive(msgspec.Struct):
    ok: bool
    stop: bool = False  # someone asked the run to stop: its process should finish


class MediaStored(msgspec.Struct):
    sha256: str
    stored: bool


class Project(msgspec.Struct):
    name: str
    run_count: int
    last_activity: float | None


class ProjectList(msgspec.Struct):
    projects: list[Project]
    # `wisp ui` only: the folders whose runs it imports (absent on `wisp server`)
    folders: list[str] | msgspec.UnsetType = msgspec.UNSET


class RunsPage(msgspec.Struct):
    runs: list[RunRow]
    total: int


class FilterParsed(msgspec.Struct):
    filter: str
    version: int
    tree: Json | None


class Series(msgspec.Struct):
    run: str
    key: str
    x: list[float]
    y: list[float | None]
    min: list[float | None]
    max: list[float | None]
    first: list[float | None]
    last: list[float | None]
    raw: bool
    #: numeric points in the range (finite or not)
    count: int
    #: NaN and infinite points in the range (their y is null)
    nonfinite: int
    #: None or text logged under this numeric key in the range (x without a y)
    nonnumeric: int = 0
    #: per x: how many values of that bucket were no finite number; null when none were
    gaps: list[int] | None = None
    #: a fork's series: the x of its view's last point at or before each fork step (oldest
    #: ancestor's first; the dashboard marks the last), absent for a run that is not a fork
    fork_x: list[float] | None = None


class SeriesList(msgspec.Struct):
    series: list[Series]


class MediaItem(msgspec.Struct):
    """A typed value; more fields depend on ``type`` (image: ``sha256``, ``path``, ...)."""

    open_members: ClassVar[bool] = True  # documented with additionalProperties
    key: str
    step: int
    type: str


class MediaList(msgspec.Struct):
    media: list[MediaItem]


class ConsoleLine(msgspec.Struct):
    id: int
    ts: float
    stream: str
    text: str


class ConsolePage(msgspec.Struct):
    lines: list[ConsoleLine]
