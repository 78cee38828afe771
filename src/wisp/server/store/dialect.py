"""Every difference between SQLite and PostgreSQL, in one place.

The store, the bulk point paths and the runs query never test which database they
run on; they call a :class:`Dialect`, chosen once from the URL scheme by
:func:`dialect_for_url` (when the engine is built) or from an engine by
:func:`dialect_of`.  What differs:

- engine setup: SQLite gets WAL, ``synchronous=NORMAL``, a 30 s busy timeout and
  ``BEGIN IMMEDIATE`` write transactions (one writer at a time); PostgreSQL gets
  psycopg 3 and a connection pool (``WISP_SERVER_DB_POOL``);
- locking: SQLite serialises writers already; PostgreSQL takes ``SELECT ... FOR
  UPDATE`` on the writer row, advisory locks on series buckets (see
  :mod:`wisp.server.series.points`) and an advisory lock around migrations;
- ``INSERT ... ON CONFLICT`` statements (each backend's ``insert`` construct;
  PostgreSQL refuses to touch one row twice in a statement, so rows are de-duplicated);
- numeric history chunks (:mod:`series.points`): fetched per key on SQLite, for every key in
  one ``unnest``/``LATERAL`` query on PostgreSQL; written with ``executemany`` on SQLite,
  one statement over arrays on PostgreSQL;
- JSON access for the filter language: ``json_type``/``json_extract`` with a ``$."a"."b"``
  path on SQLite, ``jsonb_typeof``/``jsonb_extract_path[_text]`` on PostgreSQL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Float, Text, and_, case, cast, exists, func, literal, select, text
from sqlalchemy.engine import Connection, Engine

from wisp.errors import UsageError, install_hint
from wisp.server.series import points as P
from wisp.server.series.chunks import ChunkRow
from wisp.server.store.ingest import Column

__all__ = ["Dialect", "PostgresDialect", "SqliteDialect", "dialect_for_url", "dialect_of"]

_PG_MIGRATE_LOCK = 0x77697370  # "wisp"
_SQLITE_SCHEMES = ("sqlite", "sqlite+pysqlite")
_PG_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_IGNORE: dict[tuple[str, str, tuple[str, ...]], Any] = {}  # insert_ignore's statements


class Dialect:
    """The operations whose SQL differs by backend (see the module docstring)."""

    name = ""
    #: ``wisp server``'s default ``--ingest-processes`` (:mod:`wisp.server.ingesting`)
    ingest_processes = 0

    def make_engine(self, url: str) -> Engine:
        raise NotImplementedError

    def migration_lock(self, conn: Connection) -> None:
        """Serialise migrations of several processes (inside the migration transaction)."""

    # -- inserts ------------------------------------------------------------------------------

    def insert(self, table: Any) -> Any:
        """The backend's ``INSERT`` construct (it has ``on_conflict_do_*``)."""
        raise NotImplementedError

    def insert_ignore(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str]
    ) -> None:
        """Insert ``rows``; rows whose ``keys`` already exist are left as they are."""
        # built once per backend, table and keys: building costs more than running it
        ck = (self.name, table.name, tuple(keys))
        stmt = _IGNORE.get(ck)
        if stmt is None:
            stmt = _IGNORE[ck] = self.insert(table).on_conflict_do_nothing(index_elements=keys)
        conn.execute(stmt, rows)

    def upsert(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str]
    ) -> None:
        """Insert or replace ``rows`` by ``keys``; of rows with equal keys the last wins."""
        if not rows:
            return
        stmt = self.insert(table)
        cols = [c for c in rows[0] if c not in keys]
        if cols:
            stmt = stmt.on_conflict_do_update(
                index_elements=keys, set_={c: stmt.excluded[c] for c in cols}
            )
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=keys)
        conn.execute(stmt, rows)

    # -- locking ------------------------------------------------------------------------------

    def for_update(self, query: Any) -> Any:
        """``query`` locking the rows it reads until the transaction ends, where needed."""
        return query

    def lock_series(self, conn: Connection, run_id: str, keys: set[str]) -> None:
        """Lock the series ``keys`` of ``run_id`` for the transaction, where needed."""

    def relaxed_commit(self, conn: Connection) -> None:
        """This transaction need not wait for its commit to reach the disk (losing it in a
        crash is harmless: rate-limit counters); where the backend can say so."""

    # -- numeric history chunks ---------------------------------------------------------------

    def fetch_chunks(self, conn: Connection, spans: Sequence[P.Span], cols: str) -> list[Any]:
        """Chunk rows of ``(key id, first step, last step)`` spans (see :mod:`series.points`)."""
        raise NotImplementedError

    def write_chunks(
        self, conn: Connection, rows: list[ChunkRow], deletes: list[tuple[int, int]]
    ) -> None:
        """Delete chunks ``(key_id, s0)``, then insert or replace ``rows``."""
        raise NotImplementedError

    def write_points(
        self,
        conn: Connection,
        ids: dict[str, int],
        cols: list[Column],
        pause: Callable[[], None] | None = None,
    ) -> None:
        """Merge the points of ``cols`` into their keys' chunks (see :mod:`series.points`);
        ``pause()``, if given, is called between keys (:mod:`wisp.server.readfirst`)."""
        P.write_points(self, conn, ids, cols, pause)

    def read_points(self, conn: Connection, key_ids: list[int], lo: int, hi: int) -> Any:
        """``(key_id, step, value)`` numpy columns (see :mod:`wisp.server.series.read`)."""
        from wisp.server.series.read import read_points

        return read_points(self, conn, key_ids, lo, hi)

    # -- JSON access (the filter language) ----------------------------------------------------

    def json_type(self, doc: Any, path: list[str]) -> Any:
        """The JSON type name at ``path`` (NULL when missing; ``'null'`` for JSON null)."""
        raise NotImplementedError

    def json_number(self, doc: Any, path: list[str]) -> Any:
        """The number at ``path`` as a float, NULL when it is not a number."""
        raise NotImplementedError

    def json_text(self, doc: Any, path: list[str]) -> Any:
        """The value at ``path`` as text (strings unquoted)."""
        raise NotImplementedError

    def json_is_bool(self, doc: Any, path: list[str], value: bool) -> Any:
        """True where the value at ``path`` is the JSON boolean ``value``."""
        raise NotImplementedError

    def json_array_contains(self, doc: Any, value: str) -> Any:
        """True where the JSON array column ``doc`` holds the string ``value``."""
        raise NotImplementedError


class SqliteDialect(Dialect):
    name = "sqlite"
    # writers of one file take turns on its lock: other processes would add a hop, and
    # an in-memory database is the process's own
    ingest_processes = 0

    def make_engine(self, url: str) -> Engine:
        from sqlalchemy import create_engine, event

        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:":
            db = Path(path).expanduser()
            db.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # created 0600 (SQLite gives its -wal and -shm files the same mode)
            os.close(os.open(db, os.O_CREAT | os.O_RDWR, 0o600))
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

    def insert(self, table: Any) -> Any:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)

    def fetch_chunks(self, conn: Connection, spans: Sequence[P.Span], cols: str) -> list[Any]:
        return P.fetch_chunks_sqlite(conn, spans, cols)

    def write_chunks(
        self, conn: Connection, rows: list[ChunkRow], deletes: list[tuple[int, int]]
    ) -> None:
        P.write_chunks_sqlite(conn, rows, deletes)

    @staticmethod
    def _path(path: list[str]) -> Any:
        return literal("$" + "".join(f'."{p}"' for p in path))

    def json_type(self, doc: Any, path: list[str]) -> Any:
        return func.json_type(doc, self._path(path))

    def json_number(self, doc: Any, path: list[str]) -> Any:
        val = func.json_extract(doc, self._path(path))
        return case((self.json_type(doc, path).in_(["integer", "real"]), val), else_=None)

    def json_text(self, doc: Any, path: list[str]) -> Any:
        val = func.json_extract(doc, self._path(path))
        return case((self.json_type(doc, path) == "text", val), else_=cast(val, Text))

    def json_is_bool(self, doc: Any, path: list[str], value: bool) -> Any:
        return self.json_type(doc, path) == ("true" if value else "false")

    def json_array_contains(self, doc: Any, value: str) -> Any:
        je = func.json_each(doc).table_valued("value")
        return exists(select(1).select_from(je).where(je.c.value == value))


_PING_IDLE = 1.0  # seconds a pooled connection may idle before it is pinged when taken out


def _ping_when_idle(engine: Engine) -> None:
    """A connection that idled past :data:`_PING_IDLE` answers ``SELECT 1`` when taken out
    of the pool, or is replaced (the database restarted, a proxy dropped it): the point of
    ``pool_pre_ping``, without its round trip on a busy connection.  One that broke while in
    use is a failed request, after which SQLAlchemy replaces the pool's connections."""
    import time

    import psycopg
    from sqlalchemy import event
    from sqlalchemy.exc import DisconnectionError

    @event.listens_for(engine, "checkin")
    def _checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["wisp_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("wisp_idle_since")
        if since is None or time.monotonic() - since < _PING_IDLE:
            return
        try:
            dbapi_conn.autocommit = True
            try:
                dbapi_conn.execute("SELECT 1")
            finally:
                dbapi_conn.autocommit = False
        except psycopg.Error as exc:  # closed, reset, timed out: a new connection instead
            raise DisconnectionError(f"a pooled connection is gone: {exc}") from exc


class PostgresDialect(Dialect):
    name = "postgresql"
    # batches applied apart from the reads (their GIL), on connections of their own
    ingest_processes = 2

    def make_engine(self, url: str) -> Engine:
        from sqlalchemy import create_engine

        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise UsageError(
                f"a PostgreSQL database needs its extra: {install_hint('postgres')}"
            ) from None
        from sqlalchemy import event

        rest = url.split("://", 1)[1]
        pool = int(os.environ.get("WISP_SERVER_DB_POOL", "8"))
        # LIFO: the connection just given back is the next one out, warm; the others idle
        # and only a connection idle for _PING_IDLE s is pinged when taken out (not each
        # one, as pool_pre_ping would: a round trip to the database on every checkout)
        engine = create_engine(
            f"postgresql+psycopg://{rest}", pool_size=pool, max_overflow=pool, pool_use_lifo=True
        )
        _ping_when_idle(engine)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # The planner overestimates the chunk reads' rows (a lateral index range per
            # key) by ~100x, past jit_above_cost: JIT compiling took half of each 5 ms
            # read.  wisp's queries are all short index reads; JIT never pays off here.
            with dbapi_conn.cursor() as cur:
                cur.execute("SET jit = off")
            dbapi_conn.commit()

        return engine

    def migration_lock(self, conn: Connection) -> None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATE_LOCK})

    def insert(self, table: Any) -> Any:
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)

    def upsert(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str]
    ) -> None:
        # ON CONFLICT may not touch one row twice in a statement: last wins
        rows = list({tuple(r[k] for k in keys): r for r in rows}.values())
        super().upsert(conn, table, rows, keys)

    def for_update(self, query: Any) -> Any:
        return query.with_for_update()

    def relaxed_commit(self, conn: Connection) -> None:
        conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")

    def lock_series(self, conn: Connection, run_id: str, keys: set[str]) -> None:
        P.lock_series_pg(conn, run_id, keys)

    def fetch_chunks(self, conn: Connection, spans: Sequence[P.Span], cols: str) -> list[Any]:
        return P.fetch_chunks_pg(conn, spans, cols)

    def write_chunks(
        self, conn: Connection, rows: list[ChunkRow], deletes: list[tuple[int, int]]
    ) -> None:
        P.write_chunks_pg(conn, rows, deletes)

    def json_type(self, doc: Any, path: list[str]) -> Any:
        return func.jsonb_typeof(func.jsonb_extract_path(doc, *path))

    def json_number(self, doc: Any, path: list[str]) -> Any:
        txt = func.jsonb_extract_path_text(doc, *path)
        return case((self.json_type(doc, path) == "number", cast(txt, Float)), else_=None)

    def json_text(self, doc: Any, path: list[str]) -> Any:
        return func.jsonb_extract_path_text(doc, *path)

    def json_is_bool(self, doc: Any, path: list[str], value: bool) -> Any:
        return and_(
            self.json_type(doc, path) == "boolean",
            func.jsonb_extract_path_text(doc, *path) == str(value).lower(),
        )

    def json_array_contains(self, doc: Any, value: str) -> Any:
        return doc.op("@>")(func.jsonb_build_array(cast(literal(value), Text)))


def dialect_for_url(url: str) -> Dialect:
    """The dialect for a database URL (``sqlite:///path`` or ``postgresql://...``)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in _SQLITE_SCHEMES:
        return SqliteDialect()
    if scheme in _PG_SCHEMES:
        return PostgresDialect()
    raise UsageError(
        f"unsupported database URL scheme {scheme!r}: use sqlite:///path or postgresql://..."
    )


def dialect_of(engine: Engine) -> Dialect:
    """The dialect of an engine built by :func:`wisp.server.store.db.make_engine`."""
    name = engine.dialect.name
    if name == "sqlite":
        return SqliteDialect()
    if name == "postgresql":
        return PostgresDialect()
    raise UsageError(f"unsupported database {name!r}: use SQLite or PostgreSQL")
