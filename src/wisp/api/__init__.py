"""``wisp.Api()``: query, edit and export runs from a server or a local folder (docs/api.md).

    api = wisp.Api()                                   # server from settings, else ./wisp
    runs = api.runs("mnist", filters={"config.lr": {"$lt": 0.01}})
    df = runs.histories(keys=["loss"])                 # one long table for all of them

Standard library only; pandas, pyarrow and polars are imported when a call needs them.
``import wisp`` does not load this package.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from wisp.api._filters import from_mongo, to_source
from wisp.api._objects import File, Project, Run, Runs, resolve_project
from wisp.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from wisp.api._automations import Automations

__all__ = ["Api", "File", "Project", "Run", "Runs", "from_mongo"]


class Api:
    """Runs of a wisp server (``server_url``/``api_key``, default from settings and
    ``wisp login``) or of a local folder (``dir``, or the current one with no server)."""

    def __init__(
        self,
        server_url: str | None = None,
        api_key: str | None = None,
        dir: str | os.PathLike[str] | None = None,  # noqa: A002 - the public name
        *,
        timeout: float = 60.0,
        retries: int = 6,
    ) -> None:
        if dir is not None and server_url is not None:
            raise UsageError("pass server_url (a server) or dir (a local folder), not both")
        self._backend: Any
        if dir is None:
            from wisp._settings import Settings

            settings = Settings.resolve()
            server_url = server_url or settings.server_url
            api_key = api_key or settings.api_key
            if server_url is None:
                folder: str | os.PathLike[str] | None = settings.dir or os.getcwd()
            else:
                folder = None
        else:
            folder = dir
        if folder is not None:
            from wisp.api._local import LocalBackend

            self.server_url: str | None = None
            self.dir: str | None = os.path.abspath(os.fspath(folder))
            self._backend = LocalBackend(self.dir)
        else:
            from wisp.api._http import HttpApi
            from wisp.api._server import ServerBackend

            assert server_url is not None
            self.server_url = server_url.rstrip("/")
            self.dir = None
            self._backend = ServerBackend(
                HttpApi(self.server_url, api_key, timeout=timeout, retries=retries)
            )

    def close(self) -> None:
        """Close the connection to the server (a later call opens a new one)."""
        self._backend.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.server_url or self.dir
        return f"<wisp.Api {where}>"

    @property
    def automations(self) -> Automations:
        """The server's automations (``api.automations.add(project, when, webhook)``,
        docs/automations.md); a local folder has none."""
        from wisp.api._automations import Automations
        from wisp.api._server import ServerBackend

        if not isinstance(self._backend, ServerBackend):
            raise UsageError("automations live on a server: pass server_url (or wisp login)")
        return Automations(self._backend.http)

    def projects(self) -> list[Project]:
        """Every project with its run count and last activity."""
        return [
            Project(p["name"], int(p.get("run_count", 0)), p.get("last_activity"))
            for p in self._backend.projects()
        ]

    def runs(
        self,
        path: str,
        filters: str | dict[str, Any] | None = None,
        order: str = "-created_at",
        per_page: int = 1000,
    ) -> Runs:
        """A project's runs (lazy; ``len()`` asks for the count only).

        ``filters``: wisp's filter language (``"config.lr < 0.01 and state = finished"``)
        or a MongoDB-style dict (``{"config.lr": {"$lt": 0.01}, "state": "finished"}``),
        translated to the language.  ``order``: a field, ``-`` for descending.
        ``path``: ``"entity/project"`` or ``"project"`` (a project named without an owner).
        """
        if not isinstance(path, str) or not path.strip("/"):
            raise UsageError(f"runs() needs a project name, got {path!r}")
        project = path.strip("/")  # "/project": run.entity was "" (no owner)
        return Runs(self._backend, project, to_source(filters), order, per_page)

    def run(self, path: str) -> Run:
        """One run by ``"entity/project/run_id"`` (``run.path``), ``"project/run_id"`` (run ids
        are unique per project) or ``"run_key"`` (the server's key of a run, ``Run.key``)."""
        if not isinstance(path, str) or not path.strip("/"):
            raise UsageError(f"run() needs 'project/run_id', got {path!r}")
        project, _, run_id = path.strip("/").rpartition("/")
        try:
            data = self._backend.get_run(run_id, project or None)
        except NotFoundError:
            found = resolve_project(self._backend, project) if project else project
            if found == project:
                raise
            project = found  # "entity/project/id" of a project named without its entity
            data = self._backend.get_run(run_id, project)
        if project and data.get("project") != project:
            raise NotFoundError(
                f"run {run_id!r} is in project {data.get('project')!r}, not {project!r}"
            )
        return Run(self._backend, data)
