"""The request bodies the SDK sends to the server, standard library only (API v1).

The server declares the same bodies, with their limits, as msgspec Structs in
``wisp.server.schemas.runs`` (``RunBody``, ``RecordsBody``), ``wisp.server.schemas.sweeps``
(the sweep bodies, sent by ``wisp.sweeps._remote``) and ``wisp.server.schemas.artifacts``
(the artifact bodies, sent by ``wisp.artifacts._client``); ``tests/server/test_types.py``
checks the two declarations name the same fields with the same types and that the
uploader's encoded batches decode as ``RecordsBody``.  The SDK never imports
msgspec or the server package: ``import wisp`` does not load this module, the
uploader does.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "RUN_RECORD_FIELDS",
    "ArtifactAliasBody",
    "ArtifactCommitBody",
    "ArtifactMissingBody",
    "ArtifactUseBody",
    "RecordIn",
    "RecordsBody",
    "RunBody",
    "SweepBody",
    "SweepStateBody",
    "TrialBody",
    "TrialFields",
]


class RunBody(TypedDict, total=False):
    """``PUT /api/v1/runs/{run_id}``: create or update a run; every field optional."""

    project: str | None
    name: str | None
    tags: list[str] | None
    notes: str | None
    group: str | None
    job_type: str | None
    config: dict[str, Any] | None
    metadata: dict[str, Any] | None
    state: str | None
    created_at: float | None
    by_project: bool | None  # the path is (project, id); address the run by the answer's key


# The fields of a RunBody taken as they are from the run file's RUN record.
RUN_RECORD_FIELDS = ("project", "name", "tags", "notes", "group", "job_type", "created_at")


class RecordIn(TypedDict):
    """One run-file record on the wire: its type code and JSON payload."""

    type: int
    data: dict[str, Any]


class RecordsBody(TypedDict):
    """``POST /api/v1/runs/{run_id}/records``: record ``i`` has sequence ``first_seq + i``.

    The uploader writes this body with a byte-level encoder (records are already
    JSON in the run file); the key names are these.
    """

    writer_id: str
    first_seq: int
    records: list[RecordIn]


# -- sweeps (``wisp.sweeps._controller`` builds these; ``wisp.sweeps._remote`` sends them) -----


class _SweepOptional(TypedDict, total=False):
    project: str | None
    name: str | None
    state: str
    seed: int | None


class SweepBody(_SweepOptional):
    """``POST /api/v1/projects/{project}/sweeps``: a new sweep (``_controller.new_sweep``)."""

    id: str
    config: dict[str, Any]
    created_at: float


class SweepStateBody(TypedDict):
    """``PATCH /api/v1/projects/{project}/sweeps/{sweep_id}``."""

    state: str


class TrialFields(TypedDict, total=False):
    """``PATCH .../sweeps/{sweep_id}/trials/{number}``: the members to change."""

    run_id: str
    internal: dict[str, Any]
    params: dict[str, Any]
    state: str
    created_at: float
    system_attrs: dict[str, Any]
    intermediate: dict[str, Any]
    value: float | None
    agent_id: str | None
    agent_pid: int | None
    host: str | None
    heartbeat_at: float | None
    finished_at: float | None


class _TrialOptional(TypedDict, total=False):
    system_attrs: dict[str, Any]
    intermediate: dict[str, Any]
    value: float | None
    agent_id: str | None
    agent_pid: int | None
    host: str | None
    heartbeat_at: float | None
    finished_at: float | None


class TrialBody(_TrialOptional):
    """``POST .../sweeps/{sweep_id}/trials``: claim trial ``number`` (409 when taken)."""

    number: int
    run_id: str
    internal: dict[str, Any]
    params: dict[str, Any]
    state: str
    created_at: float


# -- artifacts (``wisp.artifacts._client`` sends these) ----------------------------------------


class ArtifactMissingBody(TypedDict):
    """``POST /api/v1/artifact-files/missing``: which of these sha256 the server lacks."""

    sha256: list[str]


class _CommitOptional(TypedDict, total=False):
    description: str
    metadata: dict[str, Any]
    aliases: list[str]
    run_id: str | None


class ArtifactCommitBody(_CommitOptional):
    """``POST /api/v1/projects/{project}/artifacts/{name}/versions``: publish a manifest."""

    type: str
    manifest: dict[str, Any]


class ArtifactUseBody(TypedDict):
    """``POST /api/v1/projects/{project}/artifacts/{name}/usage``: a run consumed a version."""

    digest: str
    run_id: str


class ArtifactAliasBody(TypedDict):
    """``PUT /api/v1/projects/{project}/artifacts/{name}/aliases/{alias}``."""

    version: str
