"""Automations: triggers over runs, their edge state, and the webhook delivery queue.

Also ``runs.stepped_at`` (when the run last logged a step, for ``stalled``) and an index on
``runs.last_seen`` (the automations worker reads the runs changed since its last pass).

Revision ID: 0010_automations
Revises: 0009_lineage
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_automations"
down_revision = "0009_lineage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("stepped_at", sa.Float(), nullable=True))
    op.create_index("ix_runs_last_seen", "runs", ["last_seen"])
    op.create_table(
        "automations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("when_expr", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=True),
        sa.Column("paused", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_automations_project", "automations", ["project"])
    op.create_table(
        "automation_fired",
        sa.Column("automation_id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("fired_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("automation_id", "run_id"),
    )
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("automation_id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.Float(), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=False),
        sa.Column("response_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("sent_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_deliveries_due", "deliveries", ["status", "next_at"])
    op.create_index("ix_deliveries_automation", "deliveries", ["automation_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_deliveries_automation", table_name="deliveries")
    op.drop_index("ix_deliveries_due", table_name="deliveries")
    op.drop_table("deliveries")
    op.drop_table("automation_fired")
    op.drop_index("ix_automations_project", table_name="automations")
    op.drop_table("automations")
    op.drop_index("ix_runs_last_seen", table_name="runs")
    with op.batch_alter_table("runs") as b:
        b.drop_column("stepped_at")
