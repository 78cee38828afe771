"""Engines and migrations for the two backends, chosen by URL scheme.

``sqlite:///path`` gets WAL, ``synchronous=NORMAL``, a 30 s busy timeout and
``BEGIN IMMEDIATE`` transactions (one writer at a time, never a lock upgrade
deadlock).  ``postgresql://`` uses psycopg 3.  Migrations run through Alembic
under a lock (an advisory lock on PostgreSQL) so several processes may start at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from wisp.errors import UsageError

__all__ = ["make_engine", "migrate"]

_PG_MIGRATE_LOCK = 0x77697370  # "wisp"


def make_engine(url: str) -> Any:
    """A SQLAlchemy engine for ``url`` (``sqlite:///...`` or ``postgresql://...``)."""
    try:
        from sqlalchemy import create_engine, event
    except ImportError:  # pragma: no cover - depends on the install
        raise UsageError("the wisp server needs its extra: pip install 'wisp[server]'") from None
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("sqlite", "sqlite+pysqlite"):
        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA cache_size=-65536")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            write = conn.get_execution_options().get("wisp_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise UsageError(
                "a PostgreSQL database needs its extra: pip install 'wisp[postgres]'"
            ) from None
        rest = url.split("://", 1)[1]
        pool = int(os.environ.get("WISP_SERVER_DB_POOL", "8"))
        return create_engine(
            f"postgresql+psycopg://{rest}", pool_size=pool, max_overflow=pool, pool_pre_ping=True
        )
    raise UsageError(
        f"unsupported database URL scheme {scheme!r}: use sqlite:///path or postgresql://..."
    )


def migrate(engine: Any) -> None:
    """Bring the schema to the newest Alembic revision (idempotent, safe concurrently)."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    with engine.connect() as conn, conn.execution_options(wisp_write=True).begin():
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATE_LOCK})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
