"""Sweep ids unique per project, not per server: ``sweeps`` keyed by (project, id) and
``sweep_trials`` by (project, sweep_id, number).

A sweep made without a project (``project`` NULL) moves to ``uncategorized``, the project a
run made without one goes to (its runs are there too); ids were unique on the server, so no
two rows collide.  Each trial takes its sweep's project.

Revision ID: 0017_sweep_ids_per_project
Revises: 0016_automation_events
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision = "0017_sweep_ids_per_project"
down_revision = "0016_automation_events"
branch_labels = None
depends_on = None

_PROJECT = sa.String(length=128)


def upgrade() -> None:
    op.execute("UPDATE sweeps SET project = 'uncategorized' WHERE project IS NULL")
    with op.batch_alter_table("sweep_trials") as b:
        b.add_column(sa.Column("project", _PROJECT, nullable=True))
    op.execute(
        "UPDATE sweep_trials SET project = COALESCE((SELECT s.project FROM sweeps s "
        "WHERE s.id = sweep_trials.sweep_id), 'uncategorized')"
    )
    _primary_key("sweeps", ["project", "id"])
    _primary_key("sweep_trials", ["project", "sweep_id", "number"])


def _primary_key(table: str, columns: list[str]) -> None:
    """``project`` NOT NULL and the primary key ``columns`` (PostgreSQL names the key
    ``<table>_pkey``; SQLite's has no name and is rebuilt with the table)."""
    if op.get_bind().dialect.name == "sqlite":
        with _new_key_warning(), op.batch_alter_table(table, recreate="always") as b:
            b.alter_column("project", existing_type=_PROJECT, nullable=False)
            b.create_primary_key(f"{table}_pkey", columns)
        return
    op.alter_column(table, "project", existing_type=_PROJECT, nullable=False)
    op.drop_constraint(f"{table}_pkey", table, type_="primary")
    op.create_primary_key(f"{table}_pkey", table, columns)


@contextmanager
def _new_key_warning() -> Iterator[None]:
    """Silence SQLAlchemy's note that the rebuilt table's key differs from the old one's
    (that is the point: the batch copies the old columns' ``primary_key`` flags)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Table '_alembic_tmp_", sa.exc.SAWarning)
        yield


def downgrade() -> None:
    _old = {"sweeps": ["id"], "sweep_trials": ["sweep_id", "number"]}
    for table, columns in _old.items():
        if op.get_bind().dialect.name == "sqlite":
            with _new_key_warning(), op.batch_alter_table(table, recreate="always") as b:
                b.create_primary_key(f"{table}_pkey", columns)
        else:
            op.drop_constraint(f"{table}_pkey", table, type_="primary")
            op.create_primary_key(f"{table}_pkey", table, columns)
    with op.batch_alter_table("sweep_trials") as b:
        b.drop_column("project")
    with op.batch_alter_table("sweeps") as b:
        b.alter_column("project", existing_type=_PROJECT, nullable=True)
