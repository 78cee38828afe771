"""Artifacts: names, versions, aliases, lineage edges and the file index (issue 18).

Revision ID: 0003_artifacts
Revises: 0002_sweeps
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0003_artifacts"
down_revision = "0002_sweeps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("type", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project", "name", name="uq_artifacts_project_name"),
    )
    op.create_table(
        "artifact_versions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("artifact_id", sa.Integer(), nullable=False),
        sa.Column("version_index", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("manifest", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("meta", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("artifact_id", "version_index", name="uq_artifact_versions_index"),
        sa.UniqueConstraint("artifact_id", "digest", name="uq_artifact_versions_digest"),
    )
    op.create_table(
        "artifact_aliases",
        sa.Column("artifact_id", sa.Integer(), nullable=False),
        sa.Column("alias", sa.String(length=128), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("artifact_id", "alias"),
    )
    op.create_table(
        "artifact_edges",
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("version_id", "run_id", "kind"),
    )
    op.create_index("ix_artifact_edges_run", "artifact_edges", ["run_id"], unique=False)
    op.create_table(
        "artifact_files",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("sha256"),
    )


def downgrade() -> None:
    op.drop_index("ix_artifact_edges_run", table_name="artifact_edges")
    for t in ("artifact_files", "artifact_edges", "artifact_aliases", "artifact_versions"):
        op.drop_table(t)
    op.drop_table("artifacts")
