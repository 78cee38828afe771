"""Requests to stop live runs (``wisp.server.store.stops``).

Revision ID: 0013_run_stops
Revises: 0011_blob_refs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_run_stops"
down_revision = "0011_blob_refs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_stops",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("requested_at", sa.Float(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("run_id"),
    )


def downgrade() -> None:
    op.drop_table("run_stops")
