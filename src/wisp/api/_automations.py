"""``wisp.Api().automations``: a project's automations on the server (docs/automations.md)."""

from __future__ import annotations

import builtins
from typing import Any

from wisp._protocol import project_path
from wisp.api._http import HttpApi, q
from wisp.errors import FatalApiError, NotFoundError, UsageError

__all__ = ["Automations"]


class Automations:
    """Add, list, pause, resume, test and remove automations; read their delivery logs.

    Each automation is a dict: ``id``, ``project``, ``name``, ``when``, ``webhook`` (or
    None), ``email`` (or None), ``signed`` (a secret is set; the secret itself is never sent
    back), ``paused``, ``created_at``.
    """

    def __init__(self, http: HttpApi) -> None:
        self.http = http

    def _call(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        try:
            return self.http.json(method, path, **kw)
        except FatalApiError as exc:
            if exc.status == 404:
                raise NotFoundError(str(exc), status=404) from None
            if exc.status == 422:
                raise UsageError(str(exc)) from None
            raise

    def _one(self, project: str, automation_id: str) -> str:
        return f"{project_path(project)}/automations/{q(automation_id)}"

    def add(
        self,
        project: str,
        when: str,
        webhook: str = "",
        *,
        secret: str = "",
        name: str = "",
        email: str = "",
    ) -> dict[str, Any]:
        """A new automation: POST ``webhook`` (or e-mail ``email``, comma-separated
        addresses, through the server's SMTP server) when ``when`` becomes true for a run of
        ``project`` (or matches an artifact event); ``secret`` signs each payload
        (``X-Wisp-Signature-256``)."""
        body = {"when": when, "webhook": webhook, "secret": secret, "name": name, "email": email}
        return self._call("POST", f"{project_path(project)}/automations", body=body)

    def list(self, project: str) -> list[dict[str, Any]]:
        doc = self._call("GET", f"{project_path(project)}/automations")
        return list(doc.get("automations", []))

    def pause(self, project: str, automation_id: str) -> dict[str, Any]:
        return self._call("PATCH", self._one(project, automation_id), body={"paused": True})

    def resume(self, project: str, automation_id: str) -> dict[str, Any]:
        return self._call("PATCH", self._one(project, automation_id), body={"paused": False})

    def test(self, project: str, automation_id: str) -> dict[str, Any]:
        """Queue a sample payload (event ``test``); returns its delivery."""
        return self._call("POST", self._one(project, automation_id) + "/test")

    def remove(self, project: str, automation_id: str) -> None:
        self._call("DELETE", self._one(project, automation_id))

    def deliveries(
        self, project: str, automation_id: str, limit: int = 100
    ) -> builtins.list[dict[str, Any]]:
        """The delivery log, newest first: ``status`` (pending, sent, failed, cancelled),
        ``attempts``, ``response_code``, ``last_error``, ``run_id``, times."""
        path = self._one(project, automation_id) + "/deliveries"
        return builtins.list(self._call("GET", path, query={"limit": limit})["deliveries"])
