"""Lineage: forks read through their parents, rows set aside by rewinds (issue 37).

Revision ID: 0009_lineage
Revises: 0008_reports
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_lineage"
down_revision = "0008_reports"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_lineage",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("parent_project", sa.String(length=128), nullable=False),
        sa.Column("parent_given_id", sa.String(length=64), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_run_lineage_parent", "run_lineage", ["parent_project", "parent_given_id"])
    op.create_table(
        "set_aside",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("rewind", sa.Integer(), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("shadow_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "rewind"),
    )


def downgrade() -> None:
    op.drop_table("set_aside")
    op.drop_index("ix_run_lineage_parent", table_name="run_lineage")
    op.drop_table("run_lineage")
