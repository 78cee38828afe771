"""Saved workspaces stored as reports without prose (``wisp.reports._workspace``): each row's
``spec`` rewritten from the workspace shape into the report's panel model, and back on
downgrade.  A row the report's checks refuse is left as it was (it is still read).

Revision ID: 0014_workspaces_as_reports
Revises: 0013_run_stops
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0014_workspaces_as_reports"
down_revision = "0013_run_stops"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")
_WORKSPACES = sa.table("workspaces", sa.column("id", sa.String()), sa.column("spec", _JSON))


def _rewrite(convert: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    from wisp.errors import UsageError

    conn = op.get_bind()
    w = _WORKSPACES.c
    for wid, spec in conn.execute(sa.select(w.id, w.spec)).all():
        try:
            new = convert(spec)
        except (UsageError, KeyError, TypeError, ValueError):
            continue  # not convertible: kept, and read as it is
        if new != spec:
            conn.execute(sa.update(_WORKSPACES).where(w.id == wid).values(spec=new))


def upgrade() -> None:
    from wisp.reports._workspace import STORED_VERSION, to_stored

    _rewrite(lambda s: s if s.get("report") == STORED_VERSION else to_stored(s))


def downgrade() -> None:
    from wisp.reports._workspace import from_stored

    _rewrite(from_stored)
