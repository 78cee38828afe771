"""Reports: Markdown documents with live panels, every version kept (docs/reports.md).

Revision ID: 0008_reports
Revises: 0007_workspaces
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_reports"
down_revision = "0007_workspaces"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reports",
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("project", "id"),
    )
    op.create_index("ix_reports_project_updated", "reports", ["project", "updated_at"])
    op.create_table(
        "report_versions",
        sa.Column("project", sa.String(length=128), nullable=False),
        sa.Column("report_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("author", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("project", "report_id", "version"),
    )


def downgrade() -> None:
    op.drop_table("report_versions")
    op.drop_index("ix_reports_project_updated", table_name="reports")
    op.drop_table("reports")
