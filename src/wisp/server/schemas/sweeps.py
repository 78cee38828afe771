"""The shapes of the sweep endpoints (``/api/v1/projects/{project}/sweeps/...``), declared
once as msgspec Structs.

Bodies are decoded through these (a mismatch is a 422 naming the field); the handlers in
``views.sweeps`` then apply the checks a type cannot express (NUL characters, lone surrogates,
finite numbers, the sweep file's rules).  Optional body members are ``UNSET`` when absent:
``null`` is accepted only where the column is nullable.  The SDK's side of the bodies is
``wisp._wire`` (``SweepBody``, ``TrialBody``, ``TrialFields``, ``SweepStateBody``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from wisp._protocol import MAX_NAME_LENGTH, MAX_PROJECT_LENGTH
from wisp.server.schemas.runs import Id, ProjectName, RunRow

__all__ = [
    "SweepBody",
    "SweepCreated",
    "SweepImportance",
    "SweepList",
    "SweepListQuery",
    "SweepPath",
    "SweepRow",
    "SweepRun",
    "SweepRunList",
    "SweepRunTrial",
    "SweepStateBody",
    "SweepSummary",
    "SweepsPath",
    "TrialBody",
    "TrialCreated",
    "TrialFields",
    "TrialList",
    "TrialPath",
    "TrialRow",
    "TrialUpdateQuery",
    "TrialUpdated",
]

# The same states as wisp.sweeps._controller.SWEEP_STATES / TRIAL_STATES (a test checks).
SweepState = Literal["running", "paused", "finished", "stopped", "cancelled"]
TrialState = Literal["running", "finished", "failed", "stopped", "crashed"]
Json = dict[str, Any]
Num = Annotated[float, Meta(ge=-1e300, le=1e300)]
Seed = Annotated[int, Meta(ge=0, le=2**62)]
Pid = Annotated[int, Meta(ge=0, le=2**62)]
TrialNumber = Annotated[int, Meta(ge=0, le=2**31 - 1)]
Short = Annotated[str, Meta(max_length=256)]

# -- path and query parameters -----------------------------------------------------------------


class SweepsPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName


class SweepPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    sweep_id: Id


class TrialPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    sweep_id: Id
    number: Annotated[str, Meta(pattern=r"^[0-9]{1,9}$", description="trial number")]


class SweepListQuery(msgspec.Struct):
    project: Annotated[str, Meta(max_length=MAX_PROJECT_LENGTH)] | None = None
    id: Annotated[str, Meta(max_length=64, description="only the sweeps with this id")] | None = (
        None
    )


class TrialUpdateQuery(msgspec.Struct):
    only_running: Annotated[
        bool, Meta(description="update only while the trial is still running")
    ] = False


# -- request bodies ----------------------------------------------------------------------------


class SweepBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /projects/{project}/sweeps``: a sweep made by ``wisp.sweeps._controller.new_sweep``
    (``project``, when given, must be the path's)."""

    id: Id
    config: Json
    created_at: Num
    project: Annotated[str, Meta(max_length=MAX_PROJECT_LENGTH)] | None = None
    name: Annotated[str, Meta(max_length=MAX_NAME_LENGTH)] | None = None
    state: SweepState | UnsetType = UNSET
    seed: Seed | None = None


class SweepStateBody(msgspec.Struct, forbid_unknown_fields=True):
    """``PATCH /projects/{project}/sweeps/{sweep_id}``."""

    state: SweepState


class TrialBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST .../sweeps/{sweep_id}/trials``: claim trial ``number`` (409 when taken)."""

    number: TrialNumber
    run_id: Id
    internal: Json
    params: Json
    state: TrialState
    created_at: Num
    system_attrs: Json | UnsetType = UNSET
    intermediate: Json | UnsetType = UNSET
    value: Num | None = None
    agent_id: Short | None = None
    agent_pid: Pid | None = None
    host: Short | None = None
    heartbeat_at: Num | None = None
    finished_at: Num | None = None


class TrialFields(msgspec.Struct, forbid_unknown_fields=True):
    """``PATCH /projects/{project}/sweeps/{sweep_id}/trials/{number}``: the members to change."""

    run_id: Id | UnsetType = UNSET
    internal: Json | UnsetType = UNSET
    params: Json | UnsetType = UNSET
    state: TrialState | UnsetType = UNSET
    created_at: Num | UnsetType = UNSET
    system_attrs: Json | UnsetType = UNSET
    intermediate: Json | UnsetType = UNSET
    value: Num | UnsetType | None = UNSET
    agent_id: Short | UnsetType | None = UNSET
    agent_pid: Pid | UnsetType | None = UNSET
    host: Short | UnsetType | None = UNSET
    heartbeat_at: Num | UnsetType | None = UNSET
    finished_at: Num | UnsetType | None = UNSET


# -- responses ---------------------------------------------------------------------------------


class SweepRow(msgspec.Struct):
    id: str
    project: str
    name: str | None
    config: Json
    state: SweepState
    seed: int
    created_at: float


class SweepSummary(SweepRow):
    trial_count: int
    last_activity: float | None


class SweepList(msgspec.Struct):
    sweeps: list[SweepSummary]


class SweepCreated(msgspec.Struct):
    sweep: SweepRow


class TrialRow(msgspec.Struct):
    """A trial as stored."""

    number: int
    run_id: str
    internal: Json
    system_attrs: Json
    params: Json
    intermediate: Json
    state: TrialState
    created_at: float
    value: float | None
    agent_id: str | None
    agent_pid: int | None
    host: str | None
    heartbeat_at: float | None
    finished_at: float | None


class TrialList(msgspec.Struct):
    trials: list[TrialRow]


class TrialCreated(msgspec.Struct):
    trial: TrialRow


class TrialUpdated(msgspec.Struct):
    updated: bool


class SweepRunTrial(msgspec.Struct):
    number: int
    state: TrialState
    value: float | None
    params: Json


class SweepRun(RunRow):
    trial: SweepRunTrial | None


class SweepRunList(msgspec.Struct):
    runs: list[SweepRun]


class SweepImportance(msgspec.Struct):
    """Parameter importance (Optuna's fANOVA) or, when there is none, the ``reason``."""

    importance: dict[str, float] | None
    reason: str | None
    trials: int | None = None
