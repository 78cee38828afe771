"""The shapes of the artifact endpoints (``views.artifacts``), declared once as msgspec Structs.

Names and aliases follow :func:`wisp.artifacts._manifest.check_name` (the pattern below
says the same); the handlers still run the shared checks, so a message names the rule.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from wisp.server.schemas.runs import ProjectName

__all__ = [
    "ArtifactAliasBody",
    "ArtifactAliasPath",
    "ArtifactCommitBody",
    "ArtifactCommitted",
    "ArtifactFilePath",
    "ArtifactFileQuery",
    "ArtifactFileStored",
    "ArtifactList",
    "ArtifactMissingBody",
    "ArtifactPath",
    "ArtifactProjectPath",
    "ArtifactSummary",
    "ArtifactUseBody",
    "ArtifactUsed",
    "ArtifactVersion",
    "ArtifactVersionList",
    "ArtifactVersionPath",
    "ArtifactVersionRow",
    "ArtifactsMissing",
    "RunArtifactRef",
    "RunArtifacts",
    "VersionLineage",
]

ArtName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
Sha256 = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}$")]

# -- path and query ----------------------------------------------------------------------------


class ArtifactFilePath(msgspec.Struct, forbid_unknown_fields=True):
    sha256: Sha256


class ArtifactFileQuery(msgspec.Struct):
    name: str | None = None  # the file name the download is saved under


class ArtifactProjectPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName


class ArtifactPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    name: ArtName


class ArtifactVersionPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    name: ArtName
    ref: ArtName  # vN or an alias


class ArtifactAliasPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    name: ArtName
    alias: ArtName


# -- bodies ------------------------------------------------------------------------------------


class ArtifactMissingBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /artifact-files/missing``: which of these blobs does the server lack?"""

    sha256: list[str]


class ArtifactCommitBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /projects/{project}/artifacts/{name}/versions``: publish a manifest."""

    type: str
    manifest: dict[str, Any]
    description: str = ""
    metadata: dict[str, Any] = {}
    aliases: list[str] = []
    run_id: str | None = None


class ArtifactUseBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /projects/{project}/artifacts/{name}/usage``: a run consumed a version."""

    digest: str
    run_id: str


class ArtifactAliasBody(msgspec.Struct, forbid_unknown_fields=True):
    """``PUT /projects/{project}/artifacts/{name}/aliases/{alias}``: point it at a version."""

    version: str


# -- responses ---------------------------------------------------------------------------------


class ArtifactsMissing(msgspec.Struct):
    missing: list[str]


class ArtifactFileStored(msgspec.Struct):
    sha256: str
    stored: bool


class ArtifactSummary(msgspec.Struct):
    name: str
    type: str
    versions: int
    size: int
    latest: str | None
    updated_at: float


class ArtifactList(msgspec.Struct):
    artifacts: list[ArtifactSummary]


class ArtifactVersionRow(msgspec.Struct):
    version: str
    digest: str
    aliases: list[str]
    description: str
    metadata: dict[str, Any]
    size: int
    file_count: int
    run_id: str | None
    created_at: float


class ArtifactVersionList(msgspec.Struct):
    project: str
    name: str
    type: str
    versions: list[ArtifactVersionRow]


class VersionLineage(msgspec.Struct):
    produced_by: list[str]
    consumed_by: list[str]


class ArtifactVersion(ArtifactVersionRow):
    """One version; ``manifest`` is left out where the answer is about its aliases."""

    project: str
    name: str
    type: str
    lineage: VersionLineage
    manifest: dict[str, Any] | None = None


class ArtifactCommitted(msgspec.Struct):
    """The version published (``created``: new), or the existing one with the same digest."""

    version: ArtifactVersion
    created: bool


class ArtifactUsed(msgspec.Struct):
    version: str


class RunArtifactRef(msgspec.Struct):
    project: str
    name: str
    type: str
    version: str
    digest: str


class RunArtifacts(msgspec.Struct):
    produced: list[RunArtifactRef]
    consumed: list[RunArtifactRef]
