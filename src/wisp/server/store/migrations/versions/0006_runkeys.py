"""Schema version 3: run ids unique per project, and rate limits shared by every process.

``runs.id`` stays the server's *run key* (what every other table's ``run_id`` and every
``/runs/{key}`` URL name); the new ``runs.given_id`` is the id the client chose, unique per
project (``uq_runs_project_given``).  Existing runs keep their key and get ``given_id =
id``, so nothing that worked before changes.  ``runs.gen`` tells apart two runs that had
the same key one after the other (a run deleted and logged again): caches of a run's rows
are keyed by it.  ``rate_limits`` holds the token buckets of API keys and sign-in failures,
so several server processes on one database limit as one.  ``artifact_file_refs`` says
which artifact versions name a blob (read rights on artifact file bytes), filled here from
the stored manifests.

Revision ID: 0006_runkeys
Revises: 0005_points
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_runkeys"
down_revision = "0005_points"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as b:
        b.add_column(sa.Column("given_id", sa.String(length=64), nullable=True))
        b.add_column(sa.Column("gen", sa.String(length=16), nullable=True))
    op.execute("UPDATE runs SET given_id = id")
    with op.batch_alter_table("runs") as b:
        b.alter_column("given_id", existing_type=sa.String(length=64), nullable=False)
        b.create_unique_constraint("uq_runs_project_given", ["project", "given_id"])
    op.create_table(
        "rate_limits",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_index("ix_rate_limits_at", "rate_limits", ["at"], unique=False)
    op.create_table(
        "artifact_file_refs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", "version_id"),
    )
    _backfill_file_refs(op.get_bind())


def _backfill_file_refs(conn: sa.Connection) -> None:
    """``artifact_file_refs`` from the manifests of the versions stored so far."""
    import json

    last = -1
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT id, manifest FROM artifact_versions WHERE id > :last ORDER BY id LIMIT 500"
            ),
            {"last": last},
        ).all()
        if not rows:
            break
        refs: set[tuple[str, int]] = set()
        for vid, text in rows:
            last = vid
            try:
                entries = json.loads(text).get("entries") or {}
            except (ValueError, AttributeError):
                continue
            for e in entries.values() if isinstance(entries, dict) else ():
                if (
                    isinstance(e, dict)
                    and e.get("ref") is None
                    and isinstance(e.get("digest"), str)
                ):
                    refs.add((e["digest"], vid))
        if refs:
            conn.execute(
                sa.text("INSERT INTO artifact_file_refs (sha256, version_id) VALUES (:s, :v)"),
                [{"s": s, "v": v} for s, v in sorted(refs)],
            )


def downgrade() -> None:
    op.drop_table("artifact_file_refs")
    op.drop_index("ix_rate_limits_at", table_name="rate_limits")
    op.drop_table("rate_limits")
    with op.batch_alter_table("runs") as b:
        b.drop_constraint("uq_runs_project_given", type_="unique")
        b.drop_column("gen")
        b.drop_column("given_id")
