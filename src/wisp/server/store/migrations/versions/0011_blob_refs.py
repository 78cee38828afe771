"""Blob references carry their logger's right: ``media_refs.user_id`` (issue 41).

A run's media naming a blob its logger could not read then is recorded with that user's id and
counts for the run's readers only once that user sends the bytes; NULL (every reference made
before this revision, and those made with the right) counts as before.

Revision ID: 0011_blob_refs
Revises: 0010_automations
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_blob_refs"
down_revision = "0010_automations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("media_refs") as batch:
        batch.add_column(sa.Column("user_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("media_refs") as batch:
        batch.drop_column("user_id")
