"""Automations, second part: artifact events, encrypted secrets, e-mail actions.

``artifact_events`` is the outbox of artifact changes automations react to (a new version of a
name, an alias added or moved), written in the transaction that makes the change.
``automations.secret_enc`` holds the webhook secret encrypted (Fernet, the key from the server's
settings or data dir); existing plain ``secret`` values are encrypted into it by the server at
startup (``server.automations.secrets``: the migration has no key).  ``automations.email``:
the recipients of an e-mail action.

Revision ID: 0016_automation_events
Revises: 0014_workspaces_as_reports
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_automation_events"
down_revision = "0014_workspaces_as_reports"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "artifact_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("type", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("version", sa.String(length=32), nullable=False),
        sa.Column("alias", sa.String(length=128), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_artifact_events_created", "artifact_events", ["created_at"])
    with op.batch_alter_table("automations") as b:
        b.add_column(sa.Column("secret_enc", sa.Text(), nullable=True))
        b.add_column(sa.Column("email", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("automations") as b:
        b.drop_column("email")
        b.drop_column("secret_enc")
    op.drop_index("ix_artifact_events_created", table_name="artifact_events")
    op.drop_table("artifact_events")
