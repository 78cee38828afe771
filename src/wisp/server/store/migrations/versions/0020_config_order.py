"""A run's config and summary in the key order they were logged: ``runs.config_json`` and
``runs.summary_json`` (issue 33).

PostgreSQL's JSONB (``runs.config`` and ``runs.summary``, which the runs filters query) stores
an object's keys sorted by length, so a config or summary read back from it lost the order the
user logged (wandb gives both in insertion order).  The new columns hold the same objects as
plain JSON (PostgreSQL ``json`` keeps the text as written); readers take them.  Runs written
before this revision have NULL there and read ``config`` / ``summary``.

Revision ID: 0020_config_order
Revises: 0017_sweep_ids_per_project
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_config_order"
down_revision = "0017_sweep_ids_per_project"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("config_json", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("summary_json", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("summary_json")
        batch.drop_column("config_json")
