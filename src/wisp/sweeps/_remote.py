"""Online sweep state: the wisp server's ``/api/v1/sweeps`` endpoints (docs/http-api.md).

The same :class:`~wisp.sweeps._controller.SweepStore` as the local SQLite file: the server
keeps the rows, the agents do the sampling.  ``POST .../trials`` answers 409 when the trial
number is taken, which is the controller's cue to read again and re-sample.  The bodies sent
are declared in ``wisp._wire`` (``SweepBody``, ``SweepStateBody``, ``TrialBody``,
``TrialFields``), the server's side in ``wisp.server.schemas.sweeps``.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from wisp._upload._transport import ApiClient

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RemoteStore"]


class RemoteStore:
    """A sweep store backed by a wisp server."""

    def __init__(self, server_url: str, api_key: str | None, *, timeout: float = 30.0) -> None:
        self.client = ApiClient(server_url, api_key, timeout=timeout)

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = ()) -> Any:
        data = None if body is None else json.dumps(body).encode()
        resp = self.client.call(method, path, data, ok=ok)
        return resp.status, (json.loads(resp.body) if resp.body else {})

    @staticmethod
    def _path(sweep_id: str) -> str:
        return f"/sweeps/{quote(sweep_id, safe='')}"

    def create_sweep(self, sweep: dict[str, Any]) -> None:
        self._call("POST", "/sweeps", sweep)

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
