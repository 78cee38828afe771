"""Schema version 1: every table of ``wisp.server.store.schema``.

Revision ID: 0001_initial
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=8), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_hash"),
    )
    op.create_table(
        "blocks",
        sa.Column("key_id", sa.Integer(), nullable=False),
        sa.Column("blk", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("vmin", sa.Float(), nullable=True),
        sa.Column("vmax", sa.Float(), nullable=True),
        sa.Column("smin", sa.BigInteger(), nullable=False),
        sa.Column("smax", sa.BigInteger(), nullable=False),
        sa.Column("first_v", sa.Float(), nullable=True),
        sa.Column("last_v", sa.Float(), nullable=True),
        sa.Column("nonfinite", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key_id", "blk"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "console",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("stream", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_console_run_id", "console", ["run_id", "id"], unique=False)
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.Integer(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_events_run", "events", ["run_id", "type"], unique=False)
    op.create_table(
        "extras",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "step"),
    )
    op.create_table(
        "media_files",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("suffix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("sha256"),
    )
    op.create_table(
        "media_items",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("data", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_media_items_run_key_step", "media_items", ["run_id", "key", "step"], unique=False
    )
    op.create_table(
        "metric_keys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "key", name="uq_metric_keys_run_key"),
    )
    op.create_table(
        "points",
        sa.Column("key_id", sa.Integer(), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("nf", sa.SmallInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key_id", "step"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "run_metrics",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("spec", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "name"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("tags", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("run_group", sa.Text(), nullable=True),
        sa.Column("job_type", sa.Text(), nullable=True),
        sa.Column("config", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("summary", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("meta", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_runs_project_created", "runs", ["project", "created_at"], unique=False)
    op.create_table(
        "writers",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("writer_id", sa.String(length=64), nullable=False),
        sa.Column("acked_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "writer_id"),
    )


def downgrade() -> None:
    op.drop_table("writers")
    op.drop_table("runs")
    op.drop_table("run_metrics")
    op.drop_table("points")
    op.drop_table("metric_keys")
    op.drop_table("media_items")
    op.drop_table("media_files")
    op.drop_table("extras")
    op.drop_table("events")
    op.drop_table("console")
    op.drop_table("blocks")
    op.drop_table("api_keys")
