"""Database schema (schema version 6; Alembic revision ``0010_automations``).

One set of SQLAlchemy Core tables serves SQLite and PostgreSQL.  Changes go in a
new Alembic revision under ``migrations/versions`` *and* here.

- ``runs``         one row per run; config/summary/metadata/tags as JSON (JSONB on PostgreSQL).
- ``writers``      acknowledged record sequence per (run, writer): the exactly-once ledger.
- ``metric_keys``  one id per (run, key) of numeric history values.
- ``chunks``       numeric history (schema 3; it replaced ``points`` and ``blocks``).
- ``extras``       per (run, step): history values that are neither numbers nor media, as JSON text.
- ``media_items``  typed history values (``{"_type": ...}``) with their key and step.
- ``run_metrics``  ``define_metric`` specs; ``console`` lines; ``events`` other record types.
- ``media_files``  uploaded media by sha256; ``api_keys`` hashed API keys.

Schema version 2 (Alembic ``0004_team``) adds people and rights: ``users``, ``teams``,
``team_members`` (role viewer/member/admin), ``projects`` (owner user or team, visibility
private/team/public-read), ``sessions`` (dashboard logins, token hashes), ``audit``,
``media_owners`` (who uploaded a blob: quotas and read rights) and ``media_refs`` (which run
references a blob); ``api_keys`` gain ``user_id``, ``expires_at``, ``last_used_at``; ``runs``
gain ``owner_id``; ``writers`` gain ``user_id`` (the user whose key opened the writer); the
``console``, ``events`` and ``media_items`` ids are 64-bit on PostgreSQL.

Schema version 3 (Alembic ``0005_points``) stores numeric history in ``chunks``: one row
holds up to 256 points of one metric key over the step range ``[s0, s1]`` (ranges of a key
never overlap; primary key ``(key_id, s0)``), packed into ``data`` (steps, times and values
bit-exact, NaN and +-inf included; codec in ``server.series.chunks``), beside the aggregates series
downsampling reads instead of the points: ``n``, ``vmin``/``vmax`` over finite values,
``first_v``/``last_v`` at ``s0``/``s1`` (NULL when not finite) and the ``nonfinite`` count.
About 10 bytes a point on disk instead of ~106 (docs/server.md, "Scale").  On PostgreSQL
``toast_tuple_target`` keeps a chunk row (at most ~6 KiB) in its heap page, uncompressed
and not TOASTed.  ``metric_keys.id`` and ``chunks.key_id`` are 64-bit on PostgreSQL.

Schema version 4 (Alembic ``0006_runkeys``): ``runs.id`` is the server's *run key* (every
other ``run_id`` column and ``/runs/{key}`` URL name it); ``runs.given_id`` is the id the
client chose, unique per project; ``runs.gen`` a random token per run row (caches of a
run's rows key on it, so a run deleted and logged again under the same key is another
run); ``rate_limits`` the token buckets shared by every server process.

Schema version 5 (Alembic ``0007_workspaces``) adds ``workspaces``: saved dashboard views of a
project (panels, grouping, filter as JSON), owned by a user (``owner_id``; NULL on a local
no-auth server), ``shared`` with the project's readers or private to their owner.

Schema version 7 (Alembic ``0011_blob_refs``): ``media_refs.user_id``, the user who logged a
reference to a blob they had no right to then (it counts once they send the bytes; NULL: it
counts; docs/server.md, "Blobs").
Schema version 6 (Alembic ``0010_automations``) adds ``automations`` (a project's trigger, a
runs filter, and its webhook; ``secret`` signs the payloads and is never read back),
``automation_fired`` (the runs an automation fired for while its expression holds: the edge
state) and ``deliveries`` (the durable webhook queue and delivery log, claimed with a lease);
``runs`` gain ``stepped_at`` (when the run last logged a step: ``stalled``) and an index on
``last_seen``.

Alembic ``0016_automation_events`` adds ``artifact_events`` (the outbox of artifact changes
automations react to: a new version, an alias added or moved) and ``automations.secret_enc``
(the webhook secret, Fernet-encrypted; ``secret`` keeps a plain one only until the server
encrypts it at startup) and ``automations.email`` (an e-mail action's recipients).

Alembic ``0020_config_order``: ``runs.config_json`` and ``runs.summary_json``, the config and
summary as logged (plain JSON: it keeps the key order, which JSONB does not); readers take them,
the filters query ``config`` and ``summary``; NULL for runs written before it (their ``config``
and ``summary`` are read).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

__all__ = ["SCHEMA_VERSION", "metadata"]

SCHEMA_VERSION = 6
BIGID = BigInteger().with_variant(Integer(), "sqlite")  # INTEGER PRIMARY KEY is 64-bit
JSONT = JSON().with_variant(JSONB(), "postgresql")

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("project", String(128), nullable=False),
    Column("name", Text, nullable=False, default=""),
    Column("state", String(16), nullable=False, default="running"),
    Column("tags", JSONT, nullable=False),
    Column("notes", Text, nullable=False, default=""),
    Column("run_group", Text, nullable=True),
    Column("job_type", Text, nullable=True),
    Column("config", JSONT, nullable=False),
    Column("summary", JSONT, nullable=False),
    Column("meta", JSONT, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
    Column("exit_code", Integer, nullable=True),
    Column("last_seen", Float, nullable=False),
    Column("owner_id", Integer, nullable=True),
    Column("given_id", String(64), nullable=False),
    Column("gen", String(16), nullable=True),
    Column("stepped_at", Float, nullable=True),
    Column("config_json", JSON(), nullable=True),  # ``config`` in its logged key order
    Column("summary_json", JSON(), nullable=True),  # ``summary`` in its logged key order
    Index("ix_runs_project_created", "project", "created_at"),
    Index("ix_runs_last_seen", "last_seen"),
    UniqueConstraint("project", "given_id", name="uq_runs_project_given"),
)

writers = Table(
    "writers",
    metadata,
    Column("run_id", String(64), nullable=False),
    Column("writer_id", String(64), nullable=False),
    Column("acked_seq", BigInteger, nullable=False),
    Column("user_id", Integer, nullable=True),
    PrimaryKeyConstraint("run_id", "writer_id"),
)

metric_keys = Table(
    "metric_keys",
    metadata,
    Column("id", BIGID, primary_key=True, autoincrement=True),
    Column("run_id", String(64), nullable=False),
    Column("key", Text, nullable=False),
    UniqueConstraint("run_id", "key", name="uq_metric_keys_run_key"),
)

chunks = Table(
    "chunks",
    metadata,
    Column("key_id", BigInteger, nullable=False),
    Column("s0", BigInteger, nullable=False),
    Column("s1", BigInteger, nullable=False),
    Column("n", Integer, nullable=False),
    Column("vmin", Float, nullable=True),
    Column("vmax", Float, nullable=True),
    Column("first_v", Float, nullable=True),
    Column("last_v", Float, nullable=True),
    Column("nonfinite", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    PrimaryKeyConstraint("key_id", "s0"),
)

extras = Table(
    "extras",
    metadata,
    Column("run_id", String(64), nullable=False),
    Column("step", BigInteger, nullable=False),
    Column("time", Float, nullable=False),
    Column("data", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "step"),
)

media_items = Table(
    "media_items",
    metadata,
    Column("id", BIGID, primary_key=True, autoincrement=True),
    Column("run_id", String(64), nullable=False),
    Column("key", Text, nullable=False),
    Column("step", BigInteger, nullable=False),
    Column("time", Float, nullable=False),
    Column("type", Text, nullable=False),
    Column("data", JSONT, nullable=False),
    Index("ix_media_items_run_key_step", "run_id", "key", "step"),
)

run_metrics = Table(
    "run_metrics",
    metadata,
    Column("run_id", String(64), nullable=False),
    Column("name", Text, nullable=False),
    Column("spec", JSONT, nullable=False),
    PrimaryKeyConstraint("run_id", "name"),
)

console = Table(
    "console",
    metadata,
    Column("id", BIGID, primary_key=True, autoincrement=True),
    Column("run_id", String(64), nullable=False),
    Column("ts", Float, nullable=False),
    Column("stream", String(16), nullable=False),
    Column("text", Text, nullable=False),
    Index("ix_console_run_id", "run_id", "id"),
)

events = Table(
    "events",
    metadata,
    Column("id", BIGID, primary_key=True, autoincrement=True),
    Column("run_id", String(64), nullable=False),
    Column("type", Integer, nullable=False),
    Column("data", Text, nullable=False),
    Index("ix_events_run", "run_id", "type"),
)

media_files = Table(
    "media_files",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("suffix", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("scope", String(8), nullable=False),
    Column("name", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
    Column("user_id", Integer, nullable=True),
    Column("expires_at", Float, nullable=True),
    Column("last_used_at", Float, nullable=True),
)

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("password_hash", Text, nullable=True),
    Column("is_admin", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("disabled_at", Float, nullable=True),
)

teams = Table(
    "teams",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
)

team_members = Table(
    "team_members",
    metadata,
    Column("team_id", Integer, nullable=False),
    Column("user_id", Integer, nullable=False),
    Column("role", String(8), nullable=False),
    PrimaryKeyConstraint("team_id", "user_id"),
)

projects = Table(
    "projects",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("owner_user", Integer, nullable=True),
    Column("owner_team", Integer, nullable=True),
    Column("visibility", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
)

sessions = Table(
    "sessions",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", Integer, nullable=False),
    Column("csrf", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

audit = Table(
    "audit",
    metadata,
    Column("id", BIGID, primary_key=True, autoincrement=True),
    Column("ts", Float, nullable=False),
    Column("user_id", Integer, nullable=True),
    Column("actor", String(64), nullable=False),
    Column("action", String(64), nullable=False),
    Column("target", Text, nullable=False),
    Column("status", Integer, nullable=False),
    Column("addr", String(64), nullable=False),
    Index("ix_audit_ts", "ts"),
)

media_owners = Table(
    "media_owners",
    metadata,
    Column("sha256", String(64), nullable=False),
    Column("user_id", Integer, nullable=False),
    PrimaryKeyConstraint("sha256", "user_id"),
    Index("ix_media_owners_user", "user_id"),
)

media_refs = Table(
    "media_refs",
    metadata,
    Column("sha256", String(64), nullable=False),
    Column("run_id", String(64), nullable=False),
    # who logged the reference without a right to the blob then: it counts for the run's
    # readers only once that user sends the bytes (a media_owners row); NULL: it counts
    Column("user_id", Integer, nullable=True),
    PrimaryKeyConstraint("sha256", "run_id"),
)

rate_limits = Table(
    "rate_limits",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("tokens", Float, nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_rate_limits_at", "at"),
)

workspaces = Table(
    "workspaces",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("project", String(128), nullable=False),
    Column("name", Text, nullable=False),
    Column("owner_id", Integer, nullable=True),
    Column("shared", Integer, nullable=False, default=0),
    Column("spec", JSONT, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Index("ix_workspaces_project", "project", "updated_at"),
)

automations = Table(
    "automations",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("project", String(128), nullable=False),
    Column("name", Text, nullable=False),
    Column("when_expr", Text, nullable=False),
    Column("url", Text, nullable=False),
    Column("secret", Text, nullable=True),  # plain: only before the server encrypted it
    Column("paused", Integer, nullable=False, default=0),
    Column("owner_id", Integer, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("secret_enc", Text, nullable=True),
    Column("email", Text, nullable=True),
    Index("ix_automations_project", "project"),
)

artifact_events = Table(
    "artifact_events",
    metadata,
    Column("id", BIGID, primary_key=True, autoincrement=True),
    Column("project", String(128), nullable=False),
    Column("name", String(128), nullable=False),
    Column("type", String(128), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("version", String(32), nullable=False),
    Column("alias", String(128), nullable=True),
    Column("run_id", String(64), nullable=True),
    Column("created_at", Float, nullable=False),
    Index("ix_artifact_events_created", "created_at"),
)

automation_fired = Table(
    "automation_fired",
    metadata,
    Column("automation_id", String(32), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("fired_at", Float, nullable=False),
    PrimaryKeyConstraint("automation_id", "run_id"),
)

deliveries = Table(
    "deliveries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("automation_id", String(32), nullable=False),
    Column("run_id", String(64), nullable=True),
    Column("event", String(32), nullable=False),
    Column("body", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_at", Float, nullable=False),
    Column("lease_until", Float, nullable=False),
    Column("response_code", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("sent_at", Float, nullable=True),
    Index("ix_deliveries_due", "status", "next_at"),
    Index("ix_deliveries_automation", "automation_id", "id"),
)
