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

from wisp.api._filters import from_mongo, split_filters
from wisp.api._objects import File, Project, User, resolve_project
from wisp.api._run import Run
from wisp.api._runs import Runs
from wisp.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from wisp.api._automations import Automations

__all__ = ["Api", "File", "Project", "Run", "Runs", "User", "from_mongo"]

#: wandb's own cloud: a ``WANDB_BASE_URL`` naming it is not a wisp server.
_WANDB_CLOUD = ("https://api.wandb.ai", "http://api.wandb.ai")


def _env_server() -> tuple[str | None, str | None]:
    """``WANDB_BASE_URL`` and ``WANDB_API_KEY``, as a wandb script sets them for ``wandb.Api()``
    (read where wisp's own settings name no server)."""
    url = os.environ.get("WANDB_BASE_URL") or None
    if url is not None and url.rstrip("/").startswith(_WANDB_CLOUD):
        url = None
    return url, os.environ.get("WANDB_API_KEY") or None


class Api:
    """Runs of a wisp server (``server_url``/``api_key``, default from settings and
    ``wisp login``) or of a local folder (``dir``, or the current one with no server).

    ``transport`` replaces the HTTP connection to the server (an object with the
    ``request``/``close`` methods of ``wisp._upload._transport.Transport``)."""

    def __init__(
        self,
        server_url: str | dict[str, Any] | None = None,
        api_key: str | None = None,
        dir: str | os.PathLike[str] | None = None,  # noqa: A002 - the public name
        *,
        timeout: float | None = 60.0,
        retries: int = 6,
        overrides: dict[str, Any] | None = None,
        transport: Any = None,
    ) -> None:
        if isinstance(server_url, dict):  # wandb.Api({"entity": ...}): wandb's overrides
            overrides, server_url = server_url, None
        self.settings: dict[str, Any] = dict(overrides or {})
        server_url = server_url or self.settings.get("base_url")
        if dir is not None and server_url is not None:
            raise UsageError("pass server_url (a server) or dir (a local folder), not both")
        self._backend: Any
        self._entity: str | None = self.settings.get("entity")
        if dir is None:
            from wisp._settings import Settings

            settings = Settings.resolve()
            env_url, env_key = _env_server()
            server_url = server_url or settings.server_url or env_url
            api_key = api_key or settings.api_key or env_key
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
                HttpApi(
                    self.server_url,
                    api_key,
                    timeout=timeout or 60.0,
                    retries=retries,
                    transport=transport,
                )
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
    def default_entity(self) -> str | None:
        """The entity runs are filed under by default: ``overrides["entity"]``, else
        ``WISP_ENTITY``/``WANDB_ENTITY``, else the server's user of the API key."""
        if self._entity is None:
            from wisp._wandb_env import init_from_env

            entity = init_from_env(os.environ).get("entity")
            self._entity = entity or self._backend.user_name()
        return self._entity

    @property
    def client(self) -> Api:
        return self

    def flush(self) -> None:
        """wandb clears its cache of runs here; wisp reads runs afresh on every call."""

    @property
    def automations(self) -> Automations:
        """The server's automations (``api.automations.add(project, when, webhook)``,
        docs/automations.md); a local folder has none."""
        from wisp.api._automations import Automations
        from wisp.api._server import ServerBackend

        if not isinstance(self._backend, ServerBackend):
            raise UsageError("automations live on a server: pass server_url (or wisp login)")
        return Automations(self._backend.http)

    def projects(self, entity: str | None = None, per_page: int = 200) -> list[Project]:
        """Every project (of ``entity`` when given) with its run count and last activity."""
        out = [
            Project(p["name"], int(p.get("run_count", 0)), p.get("last_activity"), self)
            for p in self._backend.projects()
        ]
        return out if entity is None else [p for p in out if p.entity == entity]

    def project(self, name: str, entity: str | None = None) -> Project:
        """The project ``name`` (``entity/name`` with ``entity``); NotFoundError names the
        projects there are."""
        path = f"{entity}/{name}" if entity and "/" not in name else name
        found = resolve_project(self._backend, path)
        for p in self.projects():
            if p.path == found:
                return p
        self._backend.check_project(found)
        raise NotFoundError(f"no project {path!r}")

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
        source, post = split_filters(filters)
        return Runs(self._backend, project, source, order, per_page, post)

    def report(self, path: str, version: int | None = None) -> Any:
        """A report kept on the server, ``"project/ID"`` (its latest version unless
        ``version``): a ``ReportRef`` with ``markdown``, ``versions()``, ``diff()``,
        ``revert()`` and ``report`` (a ``wisp.Report``); docs/reports.md."""
        from wisp.reports._client import get

        return get(self, path, version)

    def reports(self, project: str) -> list[dict[str, Any]]:
        """The reports of a project on the server: ``{id, title, version, author, ...}``."""
        from wisp.reports._client import reports_of

        return reports_of(self, project)

    def push_report(
        self,
        report: Any,
        project: str | None = None,
        id: str | None = None,  # noqa: A002 - the report's id
        base: int | None = None,
    ) -> Any:
        """Upload a report (a ``wisp.Report``, a file path or Markdown text) as a new version
        of report ``id``, or as a new report; returns its ``ReportRef``."""
        from wisp.reports._client import push
        from wisp.reports._format import parse

        if isinstance(getattr(report, "markdown", None), str):  # a wisp.Report
            text = report.markdown
        elif isinstance(report, str) and report.startswith("---"):
            text = report
        else:
            with open(report, encoding="utf-8") as f:
                text = f.read()
        target = project or parse(text, "report").meta.get("project")
        if not target:
            raise UsageError("push_report() needs a project (none in the report either)")
        return push(self, str(target), text, id, base)

    def run(self, path: str | list[str] | tuple[str, ...]) -> Run:
        """One run by ``"entity/project/run_id"`` (``run.path``), ``"project/run_id"`` (run ids
        are unique per project) or ``"run_key"`` (the server's key of a run, ``Run.key``)."""
        if isinstance(path, (list, tuple)):  # run.path of wandb's Api: [entity, project, id]
            path = "/".join(str(p) for p in path)
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

    # -- artifacts -----------------------------------------------------------------------------

    def artifact(self, name: str, type: str | None = None) -> Any:  # noqa: A002 - wandb's name
        """The artifact version ``"[entity/]project/name:alias"`` (or ``:v3``), a
        ``wisp.Artifact`` you can ``download()``."""
        from wisp.api._artifacts import artifact

        return artifact(self, name, type)

    def artifacts(
        self,
        type_name: str,
        name: str,
        per_page: int = 50,
        tags: list[str] | None = None,
    ) -> list[Any]:
        """Every version of the artifact ``"[entity/]project/name"`` (newest first)."""
        from wisp.api._artifacts import versions

        return versions(self, type_name, name)

    def artifact_collections(
        self,
        project_name: str,
        type_name: str | None = None,
        per_page: int = 50,
    ) -> list[Any]:
        """The artifacts (collections of versions) of a project, of ``type_name`` if given."""
        from wisp.api._artifacts import collections

        return collections(self, project_name, type_name)

    def artifact_exists(self, name: str, type: str | None = None) -> bool:  # noqa: A002
        try:
            self.artifact(name, type)
        except NotFoundError:
            return False
        return True
