"""A run's config in the key order it was logged: ``runs.config_json`` (issue 33).

PostgreSQL's JSONB (``runs.config``, which the runs filters query) stores an object's keys
sorted by length, so a config read back from it lost the order the user logged.  The new
column holds the same config as plain JSON (PostgreSQL ``json`` keeps the text as written);
readers take it.  Runs written before this revision have NULL there and read ``config``.

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


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("config_json")
