"""Automations of a project: ``/projects/{project}/automations[/{id}[/test|/deliveries]]``.

Project readers list automations and their delivery logs; project admins (and site admins,
and the local ``--no-auth`` caller) create, pause, resume, test and remove them
(``http.auth`` RULES, touches ``project_admin``).  The secret is write-only: answers say
``signed`` instead.  Detection and delivery run in ``server.automations.worker``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from wisp.server.automations.secrets import Sealer
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import principal_of
from wisp.server.http.body import json_response
from wisp.server.http.problem import clean_str, invalid
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import automations as T
from wisp.server.schemas.runs import ProjectRunsPath
from wisp.server.settings import ServerSettings
from wisp.server.store.automations import AutomationStore
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_project

__all__ = ["AutomationApi"]

_ADDRESS = re.compile(r"[^@\s,<>]+@[^@\s,<>]+")


def _webhook(url: str) -> str:
    url = clean_str(url, "webhook")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid("webhook", "expected an http:// or https:// URL")
    return url


def _emails(text: str, settings: ServerSettings) -> str:
    """The recipients, normalized (``a@x, b@y``); 422 when malformed or no SMTP server is set."""
    addrs = [a.strip() for a in clean_str(text, "email").split(",") if a.strip()]
    for a in addrs:
        if not _ADDRESS.fullmatch(a):
            raise invalid("email", f"{a!r} is not an e-mail address")
    if not settings.smtp_url:
        raise invalid("email", "this server has no SMTP server (wisp server --smtp-url)")
    return ", ".join(addrs)


class AutomationApi:
    """Create, list, pause, test and remove a project's automations; read their deliveries."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.autos = AutomationStore(store, Sealer(settings.secrets_key_file))
        self.settings = settings

    @endpoint(
        "GET",
        "/projects/{project}/automations",
        scope="read",
        summary="The automations of a project",
        path_params=ProjectRunsPath,
        responses={200: T.AutomationList},
    )
    async def list_automations(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        rows = await run_in_threadpool(self.autos.of_project, project)
        return json_response({"automations": rows})

    @endpoint(
        "POST",
        "/projects/{project}/automations",
        scope="write",
        summary="Add an automation: a runs filter that POSTs a webhook when it becomes true",
        description="Needs admin rights on the project. The expression is in the runs filter "
        "language (GET /filter/parse); the secret signs every payload and is never shown again.",
        path_params=ProjectRunsPath,
        body=T.AutomationBody,
        responses={201: T.Automation},
    )
    async def create_automation(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        b: T.AutomationBody = r.body
        when = clean_str(b.when, "when")
        if bool(b.webhook) == bool(b.email):
            raise invalid("webhook", "give either a webhook or an email, not both")
        url = _webhook(b.webhook) if b.webhook else ""
        email = _emails(b.email, self.settings) if b.email else None
        name = clean_str(b.name, "name")
        secret = clean_str(b.secret, "secret") or None
        owner = principal_of(r.request).user_id
        row = await run_in_threadpool(
            self.autos.create, project, name, when, url, secret, owner, email
        )
        return json_response(row, 201)

    @endpoint(
        "GET",
        "/projects/{project}/automations/{automation_id}",
        scope="read",
        summary="One automation",
        path_params=T.AutomationPath,
        responses={200: T.Automation},
    )
    async def get_automation(self, r: In) -> Response:
        path: T.AutomationPath = r.path
        row = await run_in_threadpool(self.autos.get, path.project, path.automation_id)
        return json_response(row)

    @endpoint(
        "PATCH",
        "/projects/{project}/automations/{automation_id}",
        scope="write",
        summary="Pause or resume an automation (project admins)",
        path_params=T.AutomationPath,
        body=T.AutomationPatch,
        responses={200: T.Automation},
    )
    async def patch_automation(self, r: In) -> Response:
        path: T.AutomationPath = r.path
        b: T.AutomationPatch = r.body
        row = await run_in_threadpool(
            self.autos.set_paused, path.project, path.automation_id, b.paused
        )
        return json_response(row)

    @endpoint(
        "DELETE",
        "/projects/{project}/automations/{automation_id}",
        scope="write",
        summary="Remove an automation (project admins); its pending deliveries are cancelled",
        path_params=T.AutomationPath,
        responses={204: None},
    )
    async def delete_automation(self, r: In) -> Response:
        path: T.AutomationPath = r.path
        await run_in_threadpool(self.autos.remove, path.project, path.automation_id)
        return Response(status_code=204)

    @endpoint(
        "POST",
        "/projects/{project}/automations/{automation_id}/test",
        scope="write",
        summary="Queue a sample payload (event 'test') to the automation's webhook",
        path_params=T.AutomationPath,
        responses={202: T.Delivery},
    )
    async def test_automation(self, r: In) -> Response:
        path: T.AutomationPath = r.path
        row = await run_in_threadpool(self.autos.test, path.project, path.automation_id)
        return json_response(row, 202)

    @endpoint(
        "GET",
        "/projects/{project}/automations/{automation_id}/deliveries",
        scope="read",
        summary="The automation's delivery log, newest first",
        path_params=T.AutomationPath,
        query=T.DeliveryQuery,
        responses={200: T.DeliveryList},
    )
    async def list_deliveries(self, r: In) -> Response:
        path: T.AutomationPath = r.path
        q: T.DeliveryQuery = r.query
        rows = await run_in_threadpool(
            self.autos.deliveries, path.project, path.automation_id, q.limit
        )
        return json_response({"deliveries": rows})
