"""Engines, migrations and transactions for the two backends, chosen by URL scheme.

What differs between SQLite and PostgreSQL lives in :mod:`wisp.server.store.dialect`; this module
builds the engine through it, runs the Alembic migrations under the dialect's
migration lock (several processes may start at once), and holds :class:`Db`, the
engine + dialect + clock that every part of the store shares.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wisp.errors import UsageError, install_hint

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from wisp.server.store.dialect import Dialect

__all__ = ["Db", "make_engine", "migrate"]


def make_engine(url: str) -> Any:
    """A SQLAlchemy engine for ``url`` (``sqlite:///...`` or ``postgresql://...``)."""
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the install
        raise UsageError(f"the wisp server needs its extra: {install_hint('server')}") from None
    from wisp.server.store.dialect import dialect_for_url

    return dialect_for_url(url).make_engine(url)


def migrate(engine: Any) -> None:
    """Bring the schema to the newest Alembic revision (idempotent, safe concurrently)."""
    from alembic import command
    from alembic.config import Config

    from wisp.server.store.dialect import dialect_of

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    with _connect(engine) as conn, conn.execution_options(wisp_write=True).begin():
        dialect_of(engine).migration_lock(conn)
        cfg.attributes["connection"] = conn
        _restamp(conn)
        command.upgrade(cfg, "head")


def _restamp(conn: Any) -> None:
    """A database stamped with a revision id from before the files were renamed gets the
    new id of the same migration (:data:`wisp.server.store.migrations.RENAMED`)."""
    from sqlalchemy import inspect, text

    from wisp.server.store.migrations import RENAMED

    if not inspect(conn).has_table("alembic_version"):
        return
    for (old,) in conn.execute(text("SELECT version_num FROM alembic_version")).all():
        if old in RENAMED:
            conn.execute(
                text("UPDATE alembic_version SET version_num = :new WHERE version_num = :old"),
                {"new": RENAMED[old], "old": old},
            )


def _connect(engine: Any) -> Any:
    """The first connection to a database: one that cannot be opened (no server, wrong
    password, unwritable file) is a ``ConnectionError`` naming it (password hidden), so the
    CLI says it in one line."""
    from sqlalchemy.exc import OperationalError

    try:
        return engine.connect()
    except OperationalError as exc:
        where = engine.url.render_as_string(hide_password=True)
        why = " ".join(str(exc.orig or exc).split())
        raise ConnectionError(f"cannot open the database {where}: {why}") from None


class Db:
    """The engine, its dialect and the clock, shared by the parts of the store."""

    def __init__(self, engine: Engine, clock: Callable[[], float]) -> None:
        from wisp.server.store.dialect import dialect_of

        self.engine = engine
        self.dialect: Dialect = dialect_of(engine)
        self.clock = clock
        self._local = threading.local()  # .conn: the connection shared by reading()

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite); inside :meth:`reading`, on
        its connection (a second one while holding the first could wait on a pool that
        threads holding one each had emptied)."""
        shared = getattr(self._local, "conn", None)
        if shared is not None and not getattr(self._local, "writing", False):
            shared.rollback()  # ends the reads' implicit transaction (none in the database)
            shared.execution_options(isolation_level=shared.default_isolation_level)
            self._local.writing = True
            try:
                with shared.begin():
                    yield shared
            finally:
                self._local.writing = False
                shared.execution_options(isolation_level="AUTOCOMMIT")
            return
        with self.engine.connect() as conn:
            conn.execution_options(wisp_write=True)
            with conn.begin():
                yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads: this thread's shared one inside :meth:`reading`."""
        shared = getattr(self._local, "conn", None)
        if shared is not None:
            yield shared
            return
        with self._reader() as conn:
            yield conn

    def _reader(self) -> Connection:
        """A new read connection.  On PostgreSQL in autocommit: under read committed every
        statement of a transaction takes its own snapshot anyway, so a read-only one gains
        nothing from ``BEGIN`` and ``ROLLBACK`` but their two round trips."""
        conn = self.engine.connect()
        if self.dialect.name == "postgresql":
            conn.execution_options(isolation_level="AUTOCOMMIT")
        return conn

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Inside, this thread's :meth:`read` and :meth:`tx` blocks share one connection: one
        checkout instead of one each (the auth middleware's few lookups of a request).
        PostgreSQL only, where each checkout is a wait on the pool and round trips to the
        database server; SQLite's are calls in the process."""
        if self.dialect.name != "postgresql" or getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._reader() as conn:
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None
