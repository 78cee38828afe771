"""Shapes of the automations endpoints (``views.automations``; docs/automations.md)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from wisp.server.schemas.runs import ProjectName

__all__ = [
    "Automation",
    "AutomationBody",
    "AutomationList",
    "AutomationPatch",
    "AutomationPath",
    "Delivery",
    "DeliveryList",
    "DeliveryQuery",
]

AutomationId = Annotated[str, Meta(pattern=r"^[0-9a-f]{1,32}$")]
Status = Literal["pending", "sent", "failed", "cancelled", "limited"]


class AutomationBody(msgspec.Struct, forbid_unknown_fields=True):
    when: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=4000,
            description="runs filter expression; fires when it becomes true for a run",
        ),
    ]
    webhook: Annotated[
        str, Meta(max_length=2000, description="http(s) URL to POST events to (or give email)")
    ] = ""
    email: Annotated[
        str,
        Meta(
            max_length=2000,
            description="comma-separated addresses to e-mail events to, through the server's "
            "SMTP server (instead of a webhook)",
        ),
    ] = ""
    name: Annotated[str, Meta(max_length=200)] = ""
    secret: Annotated[
        str, Meta(max_length=500, description="signs payloads (HMAC-SHA256); never shown again")
    ] = ""


class AutomationPatch(msgspec.Struct, forbid_unknown_fields=True):
    paused: bool


class Automation(msgspec.Struct):
    id: str
    project: str
    name: str
    when: str
    webhook: str | None
    email: str | None
    signed: bool
    paused: bool
    created_at: float


class AutomationList(msgspec.Struct):
    automations: list[Automation]


class AutomationPath(msgspec.Struct, forbid_unknown_fields=True):
    project: ProjectName
    automation_id: AutomationId


class DeliveryQuery(msgspec.Struct, forbid_unknown_fields=True):
    limit: Annotated[int, Meta(ge=1, le=1000)] = 100


class Delivery(msgspec.Struct):
    id: int
    automation_id: str
    run_id: str | None
    event: Literal["run", "artifact", "alert", "test"]
    status: Status
    attempts: int
    response_code: int | None
    last_error: str | None
    created_at: float
    sent_at: float | None
    next_at: float


class DeliveryList(msgspec.Struct):
    deliveries: list[Delivery]
