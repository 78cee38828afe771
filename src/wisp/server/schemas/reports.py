"""Shapes of the reports endpoints (``views/reports``; docs/http-api.md, "Reports")."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from wisp._protocol import ID_PATTERN, MAX_REPORT_BYTES, MAX_REPORT_PANELS
from wisp.server.schemas.runs import ProjectName

__all__ = [
    "DiffQuery",
    "DrawQuery",
    "PreviewBody",
    "ReportBody",
    "ReportDiff",
    "ReportDoc",
    "ReportList",
    "ReportPath",
    "ReportRow",
    "ReportVersion",
    "RevertBody",
    "VersionList",
    "VersionQuery",
]

ReportId = Annotated[str, Meta(pattern=f"^{ID_PATTERN}$")]
Version = Annotated[int, Meta(ge=1, le=1 << 31)]


class ReportPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    report_id: ReportId


class ReportBody(msgspec.Struct, forbid_unknown_fields=True):
    """A new version: the whole report file.  ``base``: the version it was edited from (a
    later version already there: 409)."""

    markdown: Annotated[str, Meta(min_length=1, max_length=MAX_REPORT_BYTES)]
    base: Version | None = None


class PreviewBody(msgspec.Struct, forbid_unknown_fields=True):
    markdown: Annotated[str, Meta(min_length=1, max_length=MAX_REPORT_BYTES)]


class RevertBody(msgspec.Struct, forbid_unknown_fields=True):
    version: Version


class VersionQuery(msgspec.Struct):
    version: Version | None = None


class DrawQuery(msgspec.Struct):
    """``panels``: draw the first N panels only (the report page's first screen)."""

    version: Version | None = None
    panels: Annotated[int, Meta(ge=1, le=MAX_REPORT_PANELS)] | None = None


class DiffQuery(msgspec.Struct):
    a: Version
    b: Version


class ReportRow(msgspec.Struct):
    id: str
    project: str
    title: str
    version: int
    created_at: float
    updated_at: float


class ReportDoc(msgspec.Struct):
    """One version of a report; ``latest``: the report's newest version number."""

    id: str
    project: str
    version: int
    latest: int
    title: str
    markdown: str
    author: str | None
    created_at: float
    updated_at: float
    created: bool = False


class ReportList(msgspec.Struct):
    reports: list[ReportRow]


class ReportVersion(msgspec.Struct):
    version: int
    title: str
    author: str | None
    created_at: float
    chars: int


class VersionList(msgspec.Struct):
    versions: list[ReportVersion]


class ReportDiff(msgspec.Struct):
    a: int
    b: int
    diff: str
