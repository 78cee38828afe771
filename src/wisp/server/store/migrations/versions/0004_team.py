"""Schema version 2: users, teams, projects with rights, sessions, audit, run owners.

Upgrading a database that already holds API keys or runs creates a site admin user named
``admin`` (no password: set one with ``wisp server users reset-password admin``) and gives
it every existing key, run and project, so nothing that worked before stops working.

Revision ID: 0004_team
Revises: 0003_artifacts
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0004_team"
down_revision = "0003_artifacts"
branch_labels = None
depends_on = None

_BIGID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=True),
        sa.Column("is_admin", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("disabled_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "team_members",
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "user_id"),
    )
    op.create_table(
        "projects",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("owner_user", sa.Integer(), nullable=True),
        sa.Column("owner_team", sa.Integer(), nullable=True),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("csrf", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_table(
        "audit",
        sa.Column("id", _BIGID, autoincrement=True, nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("addr", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_ts", "audit", ["ts"], unique=False)
    op.create_table(
        "media_owners",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", "user_id"),
    )
    op.create_index("ix_media_owners_user", "media_owners", ["user_id"], unique=False)
    op.create_table(
        "media_refs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("sha256", "run_id"),
    )
    with op.batch_alter_table("api_keys") as b:
        b.add_column(sa.Column("user_id", sa.Integer(), nullable=True))
        b.add_column(sa.Column("expires_at", sa.Float(), nullable=True))
        b.add_column(sa.Column("last_used_at", sa.Float(), nullable=True))
    with op.batch_alter_table("runs") as b:
        b.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
    with op.batch_alter_table("writers") as b:
        b.add_column(sa.Column("user_id", sa.Integer(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":  # SQLite's INTEGER keys are 64-bit already
        for table in ("console", "events", "media_items"):
            op.alter_column(table, "id", type_=sa.BigInteger(), existing_type=sa.Integer())
    _adopt_existing()


def _adopt_existing() -> None:
    """Give existing keys, runs and projects to a site admin ``admin`` (created if needed)."""
    conn = op.get_bind()
    has_keys = conn.execute(sa.text("SELECT count(*) FROM api_keys")).scalar()
    has_runs = conn.execute(sa.text("SELECT count(*) FROM runs")).scalar()
    if not has_keys and not has_runs:
        return
    now = time.time()
    conn.execute(
        sa.text(
            "INSERT INTO users (name, password_hash, is_admin, created_at) "
            "VALUES ('admin', NULL, 1, :now)"
        ),
        {"now": now},
    )
    uid = conn.execute(sa.text("SELECT id FROM users WHERE name = 'admin'")).scalar_one()
    conn.execute(sa.text("UPDATE api_keys SET user_id = :u"), {"u": uid})
    conn.execute(sa.text("UPDATE runs SET owner_id = :u"), {"u": uid})
    conn.execute(sa.text("UPDATE writers SET user_id = :u"), {"u": uid})
    conn.execute(
        sa.text(
            "INSERT INTO projects (name, owner_user, owner_team, visibility, created_at) "
            "SELECT DISTINCT project, :u, NULL, 'private', :now FROM runs"
        ),
        {"u": uid, "now": now},
    )
    conn.execute(
        sa.text("INSERT INTO media_owners (sha256, user_id) SELECT sha256, :u FROM media_files"),
        {"u": uid},
    )
    _backfill_media_refs(conn)


def _backfill_media_refs(conn: sa.Connection) -> None:
    """``media_refs`` for existing media items (read rights and ``wisp server gc``)."""
    import json
    import re

    sha = re.compile(r'"sha256"\s*:\s*"([0-9a-f]{64})"')
    refs: set[tuple[str, str]] = set()
    last = -1
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT id, run_id, data FROM media_items WHERE id > :last ORDER BY id LIMIT 5000"
            ),
            {"last": last},
        ).all()
        if not rows:
            break
        for item_id, run_id, data in rows:
            last = item_id
            text = data if isinstance(data, str) else json.dumps(data)
            refs.update((s, run_id) for s in sha.findall(text))
    rows_out = [{"s": s, "r": r} for s, r in sorted(refs)]
    if rows_out:
        conn.execute(sa.text("INSERT INTO media_refs (sha256, run_id) VALUES (:s, :r)"), rows_out)


def downgrade() -> None:
    with op.batch_alter_table("writers") as b:
        b.drop_column("user_id")
    with op.batch_alter_table("runs") as b:
        b.drop_column("owner_id")
    with op.batch_alter_table("api_keys") as b:
        b.drop_column("last_used_at")
        b.drop_column("expires_at")
        b.drop_column("user_id")
    for table in ("media_refs", "media_owners", "audit", "sessions", "projects"):
        op.drop_table(table)
    for table in ("team_members", "teams", "users"):
        op.drop_table(table)
