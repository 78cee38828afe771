"""Types of the lineage endpoint (``views.lineage``): a run's parent, forks and rows set aside."""

from __future__ import annotations

from typing import Annotated

import msgspec

from wisp.server.schemas.runs import Id

__all__ = [
    "ForkRow",
    "LineageFork",
    "LineageParent",
    "ProjectForks",
    "RestorePath",
    "Restored",
    "RunLineage",
    "SetAsidePart",
]


class LineageParent(msgspec.Struct):
    """The run this one was forked from: its id and project, its key on this server (null
    while it is not here) and the fork step (the parent's last step in this run's view)."""

    id: str
    project: str
    key: str | None
    step: int


class LineageFork(msgspec.Struct):
    """A run forked from this one (that the caller may read)."""

    id: str
    key: str
    project: str
    name: str
    step: int


class SetAsidePart(msgspec.Struct):
    """What rewind ``rewind`` set aside: the numeric points past ``step``."""

    rewind: int
    step: int
    points: int
    min_step: int | None
    max_step: int | None


class RunLineage(msgspec.Struct):
    parent: LineageParent | None
    forks: list[LineageFork]
    set_aside: list[SetAsidePart]


class RestorePath(msgspec.Struct, forbid_unknown_fields=True):
    run_id: Id
    #: the rewind's number (digits: path parameters are text)
    rewind: Annotated[str, msgspec.Meta(pattern="^[0-9]{1,9}$")]


class Restored(msgspec.Struct):
    """The run made of what a rewind set aside: its key and id (a fork at the rewind's step)."""

    key: str
    id: str


class ForkRow(msgspec.Struct):
    """A run of the project forked from run ``parent_key`` (on this server) at ``step``."""

    key: str
    parent_key: str
    step: int


class ProjectForks(msgspec.Struct):
    """The project's forks whose parent is on this server, oldest first."""

    forks: list[ForkRow]
