"""Sweeps: the ``sweeps`` and ``sweep_trials`` tables of ``wisp.server.store.sweeps``.

Revision ID: 0002_sweeps
Revises: 0001_initial
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002_sweeps"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

JSONT = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=128), nullable=True),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("config", JSONT, nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_sweeps_project_created", "sweeps", ["project", "created_at"])
    op.create_table(
        "sweep_trials",
        sa.Column("sweep_id", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("internal", JSONT, nullable=False),
        sa.Column("system_attrs", JSONT, nullable=False),
        sa.Column("params", JSONT, nullable=False),
        sa.Column("intermediate", JSONT, nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("agent_id", sa.String(length=64), nullable=True),
        sa.Column("agent_pid", sa.BigInteger(), nullable=True),
        sa.Column("host", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=True),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("sweep_id", "number"),
    )


def downgrade() -> None:
    op.drop_table("sweep_trials")
    op.drop_index("ix_sweeps_project_created", table_name="sweeps")
    op.drop_table("sweeps")
