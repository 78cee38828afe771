"""Workspaces: saved dashboard views of a project, shared or private to their owner.

Revision ID: 0007_workspaces
Revises: 0006_runkeys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007_workspaces"
down_revision = "0006_runkeys"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "workspaces",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("shared", sa.Integer(), nullable=False),
        sa.Column("spec", _JSON, nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_workspaces_project", "workspaces", ["project", "updated_at"])


def downgrade() -> None:
    op.drop_index("ix_workspaces_project", table_name="workspaces")
    op.drop_table("workspaces")
