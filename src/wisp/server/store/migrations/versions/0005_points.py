"""Schema version 3: numeric history in compressed per-key ``chunks``; 64-bit key ids.

``points`` (one row per point, ~106 bytes each on PostgreSQL with its index) and ``blocks``
(64-step aggregates) become ``chunks``: up to 256 points of one key per row, packed, with
the row's aggregates beside them (``server/store/schema.py``,
``server/series/chunks.py``).  Existing
points are moved over key by key, bit for bit (NaN/+-inf included); ``metric_keys.id`` is
64-bit on PostgreSQL (its sequence too).  The downgrade unpacks the chunks into ``points``
and recomputes ``blocks``.

Revision ID: 0005_points
Revises: 0004_team
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005_points"
down_revision = "0004_team"
branch_labels = None
depends_on = None

_FLUSH = 64 * 256  # points of one key held before its full chunks are written
_WRITE = 2000  # chunk rows per write


def _dialect(bind: Any) -> Any:
    from wisp.server.store.dialect import PostgresDialect, SqliteDialect

    return PostgresDialect() if bind.dialect.name == "postgresql" else SqliteDialect()


def _move_points(bind: Any) -> None:
    """Stream ``points`` in (key_id, step) order into chunk rows."""
    from wisp.server.series.chunks import CHUNK, columns, pieces

    dialect = _dialect(bind)
    pending: list[Any] = []
    buf: list[list[Any]] = [[], [], [], []]
    key = -1

    def flush(final: bool) -> None:
        steps, times, values, nfs = buf
        n = len(steps) if final else len(steps) // CHUNK * CHUNK
        if not n:
            return
        cols = columns(steps[:n], times[:n], values[:n], nfs[:n] if any(nfs[:n]) else None)
        pending.extend(pieces(key, *cols))
        for b in buf:
            del b[:n]
        if len(pending) >= _WRITE:
            dialect.write_chunks(bind, pending, [])
            pending.clear()

    q = sa.text("SELECT key_id, step, time, value, nf FROM points ORDER BY key_id, step")
    result = bind.execute(q.execution_options(stream_results=True, yield_per=50_000))
    for k, step, t, v, nf in result:
        if k != key:
            flush(True)
            key = k
        buf[0].append(step)
        buf[1].append(t)
        buf[2].append(v)
        buf[3].append(nf)
        if len(buf[0]) >= _FLUSH:
            flush(False)
    flush(True)
    if pending:
        dialect.write_chunks(bind, pending, [])


def upgrade() -> None:
    bind = op.get_bind()
    pg = bind.dialect.name == "postgresql"
    op.create_table(
        "chunks",
        sa.Column("key_id", sa.BigInteger(), nullable=False),
        sa.Column("s0", sa.BigInteger(), nullable=False),
        sa.Column("s1", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("vmin", sa.Float(), nullable=True),
        sa.Column("vmax", sa.Float(), nullable=True),
        sa.Column("first_v", sa.Float(), nullable=True),
        sa.Column("last_v", sa.Float(), nullable=True),
        sa.Column("nonfinite", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("key_id", "s0"),
    )
    if pg:
        # a chunk row (<= ~6 KiB) stays in its heap page, not compressed again nor TOASTed
        op.execute("ALTER TABLE chunks SET (toast_tuple_target = 8160)")
        op.execute("ALTER TABLE chunks ALTER COLUMN data SET STORAGE EXTERNAL")
    _move_points(bind)
    op.drop_table("points")
    op.drop_table("blocks")
    if pg:
        op.alter_column("metric_keys", "id", type_=sa.BigInteger(), existing_nullable=False)
        op.execute("ALTER SEQUENCE IF EXISTS metric_keys_id_seq AS bigint")


def downgrade() -> None:
    from wisp.server.series.chunks import decode, nf_codes

    bind = op.get_bind()
    pg = bind.dialect.name == "postgresql"
    if pg:
        op.execute("ALTER SEQUENCE IF EXISTS metric_keys_id_seq AS integer")
        op.alter_column("metric_keys", "id", type_=sa.Integer(), existing_nullable=False)
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
    ins = sa.text("INSERT INTO points (key_id, step, time, value, nf) VALUES (:k, :s, :t, :v, :nf)")
    q = sa.text("SELECT key_id, data FROM chunks ORDER BY key_id, s0")
    result = bind.execute(q.execution_options(stream_results=True, yield_per=1000))
    for k, data in result:
        steps, times, values = decode(bytes(data))
        nf = nf_codes(values)
        rows = [
            {"k": k, "s": s, "t": t, "v": None if c else v, "nf": c}
            for s, t, v, c in zip(
                steps.tolist(), times.tolist(), values.tolist(), nf.tolist(), strict=True
            )
        ]
        bind.execute(ins, rows)
    bind.execute(
        sa.text(
            """
INSERT INTO blocks (key_id, blk, n, vmin, vmax, smin, smax, first_v, last_v, nonfinite)
SELECT g.key_id, g.blk, g.n, g.vmin, g.vmax, g.smin, g.smax,
  (SELECT p.value FROM points p WHERE p.key_id = g.key_id AND p.step = g.smin),
  (SELECT p.value FROM points p WHERE p.key_id = g.key_id AND p.step = g.smax),
  g.nonfinite
FROM (
  SELECT key_id, step / 64 AS blk, count(*) AS n, min(value) AS vmin, max(value) AS vmax,
    min(step) AS smin, max(step) AS smax, sum(CASE WHEN nf <> 0 THEN 1 ELSE 0 END) AS nonfinite
  FROM points GROUP BY key_id, step / 64
) g
"""
        )
    )
    op.drop_table("chunks")
