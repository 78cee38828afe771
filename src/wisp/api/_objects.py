"""Small objects ``wisp.Api()`` hands out (projects, files, users), the same over a server
and over a local folder, and the helpers the run collections share."""

from __future__ import annotations

import os
from typing import Any

from wisp._protocol import project_entity
from wisp.errors import UsageError

__all__ = ["File", "Project", "User", "resolve_project"]


class Project:
    """A project: ``name`` (without its entity, as in wandb), ``entity``, ``path``,
    ``run_count``, ``last_activity``; ``runs()`` lists its runs."""

    def __init__(
        self, name: str, run_count: int, last_activity: float | None, api: Any = None
    ) -> None:
        self.path = name
        self.entity, self.name = project_entity(name)
        self.run_count = run_count
        self.last_activity = last_activity
        self._api = api

    def runs(self, filters: Any = None, order: str = "-created_at", per_page: int = 1000) -> Any:
        """The project's runs (``Api.runs`` of this project)."""
        if self._api is None:
            raise UsageError("this Project was made without an Api")
        return self._api.runs(self.path, filters, order, per_page)

    def __repr__(self) -> str:
        return f"<Project {self.path} runs={self.run_count}>"


class User:
    """Who made a run: ``username`` (``name`` is the same)."""

    def __init__(self, username: str) -> None:
        self.username = username
        self.name = username

    def __repr__(self) -> str:
        return f"<User {self.username}>"


class File:
    """A file saved with ``wisp.save()``; ``download(root)`` writes it under ``root``."""

    def __init__(self, backend: Any, run_id: str, info: dict[str, Any]) -> None:
        self._backend = backend
        self.run_id = run_id
        self.name: str = info["name"]
        self.size: int | None = info.get("size")
        self.sha256: str | None = info.get("sha256")
        self._info = info

    def download(
        self, root: str = ".", replace: bool = False, exist_ok: bool = False, api: Any = None
    ) -> str:
        """Write the file to ``<root>/<name>``; returns the path.

        An existing file is kept when ``exist_ok`` (the path is returned), overwritten with
        ``replace``, else an ``ExistsError`` (a ``ValueError``, as wandb raises) names it.  A
        name that would land outside ``root`` (absolute, ``..``, a drive letter) is refused
        with UsageError."""
        from wisp._localpath import local_path

        path = local_path(root, self.name)
        if os.path.exists(path) and not replace:
            if exist_ok:
                return path
            from wisp.errors import ExistsError

            raise ExistsError(
                f"{path} exists: pass replace=True to overwrite it or exist_ok=True to keep it"
            )
        data = self._backend.file_bytes(self.run_id, self._info)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def __repr__(self) -> str:
        return f"<File {self.name} size={self.size}>"


def resolve_project(backend: Any, project: str) -> str:
    """``project``, or ``name`` for an ``entity/name`` that is no project when ``name`` is one:
    a wandb-style path (``run.path`` of wandb, or of wisp before entities) to a project
    named without its entity still finds it."""
    entity, name = project_entity(project)
    if entity:
        names = {p["name"] for p in backend.projects()}
        if project not in names and name in names:
            return name
    return project


def renamed(runs: list[Any]) -> dict[str, str]:
    """key -> id of the runs the server knows by another key (their id was taken first in
    another project): histories name runs by id, as the rest of the API does."""
    return {r.key: r.id for r in runs if r.key != r.id}


def order_of(order: str) -> tuple[str, str]:
    if not isinstance(order, str) or not order.strip("+-"):
        raise UsageError(f"order must be a field name like '-created_at', got {order!r}")
    from wisp.api._filters import field_name

    if order.startswith("-"):
        return field_name(order[1:]), "desc"
    return field_name(order.lstrip("+")), "asc"
