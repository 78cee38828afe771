"""Online sweep state: the wisp server's sweep endpoints (docs/http-api.md).

The same :class:`~wisp.sweeps._controller.SweepStore` as the local SQLite file: the server
keeps the rows, the agents do the sampling.  A sweep on a server is named by its project and
its id (``project/id``, or ``entity/project/id``): ids are unique per project, so a store is
bound to one project (:func:`resolve` finds it for a bare id).  ``POST .../trials`` answers
409 when the trial number is taken, which is the controller's cue to read again and re-sample.
The bodies sent are declared in ``wisp._wire`` (``SweepBody``, ``SweepStateBody``,
``TrialBody``, ``TrialFields``), the server's side in ``wisp.server.schemas.sweeps``.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlencode

from wisp._protocol import DEFAULT_PROJECT, project_path, project_problem
from wisp._upload._transport import ApiClient

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RemoteStore", "split_id"]


def split_id(sweep_id: str) -> tuple[str | None, str]:
    """``(project, id)`` of ``id``, ``project/id`` or ``entity/project/id`` (wandb's form);
    the project is None for a bare id."""
    from wisp.errors import UsageError

    if not isinstance(sweep_id, str) or not sweep_id.strip("/"):
        raise UsageError(f"a sweep id must be a non-empty string, got {sweep_id!r}")
    project, _, bare = sweep_id.strip("/").rpartition("/")
    if project and project_problem(project) is not None:
        raise UsageError(
            f"sweep {sweep_id!r}: give 'id', 'project/id' or 'entity/project/id' "
            f"(the project {project_problem(project)})"
        )
    return project or None, bare


class RemoteStore:
    """A sweep store backed by a wisp server, for the sweeps of one project."""

    def __init__(
        self,
        server_url: str,
        api_key: str | None,
        *,
        project: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.client = ApiClient(server_url, api_key, timeout=timeout)
        self.project = project or DEFAULT_PROJECT

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = ()) -> Any:
        data = None if body is None else json.dumps(body).encode()
        resp = self.client.call(method, path, data, ok=ok)
        return resp.status, (json.loads(resp.body) if resp.body else {})

    def _path(self, sweep_id: str) -> str:
        return f"{project_path(self.project)}/sweeps/{quote(sweep_id, safe='')}"

    def resolve(self, sweep_id: str) -> str:
        """The project of the one sweep ``sweep_id`` the caller may read (the store is then
        bound to it); a UsageError when there is none, or several in different projects."""
        from wisp.errors import UsageError

        _status, doc = self._call("GET", "/sweeps?" + urlencode({"id": sweep_id}))
        projects = sorted({str(s["project"]) for s in doc.get("sweeps", [])})
        if not projects:
            raise UsageError(f"no sweep {sweep_id!r} on the server (that you may read)")
        if len(projects) > 1:
            raise UsageError(
                f"sweep id {sweep_id!r} is in several projects ({', '.join(projects)}): "
                f"give it as 'project/{sweep_id}'"
            )
        self.project = projects[0]
        return self.project

    def create_sweep(self, sweep: dict[str, Any]) -> None:
        """Create ``sweep`` in its project (``uncategorized`` for none), which binds the store."""
        self.project = sweep.get("project") or DEFAULT_PROJECT
        body = {**sweep, "project": self.project}
        self._call("POST", f"{project_path(self.project)}/sweeps", body)

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        _status, doc = self._call("GET", self._path(sweep_id))
        return dict(doc)

    def set_sweep_state(self, sweep_id: str, state: str) -> None:
        self._call("PATCH", self._path(sweep_id), {"state": state})

    def list_trials(self, sweep_id: str) -> list[dict[str, Any]]:
        _status, doc = self._call("GET", self._path(sweep_id) + "/trials")
        return list(doc["trials"])

    def add_trial(self, sweep_id: str, trial: dict[str, Any]) -> bool:
        status, _doc = self._call("POST", self._path(sweep_id) + "/trials", trial, ok=(409,))
        return bool(status != 409)

    def update_trial(
        self, sweep_id: str, number: int, fields: dict[str, Any], only_running: bool = False
    ) -> bool:
        path = f"{self._path(sweep_id)}/trials/{int(number)}"
        if only_running:
            path += "?only_running=true"
        _status, doc = self._call("PATCH", path, fields)
        return bool(doc.get("updated"))
