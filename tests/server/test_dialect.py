"""The SQL dialect layer (src/wisp/server/store/dialect.py), run on SQLite and on PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import select

from wisp.errors import UsageError
from wisp.server.store import schema as S
from wisp.server.store.dialect import (
    PostgresDialect,
    SqliteDialect,
    dialect_for_url,
    dialect_of,
)

CONFIG = {"lr": 0.5, "n": 3, "name": "adam", "flag": True, "off": False, "none": None}
CONFIG["nested"] = {"a b": {"c": 7}}


def test_dialect_is_chosen_by_url_scheme_and_engine() -> None:
    """sqlite:// and postgresql:// URLs pick their dialect; another scheme is refused by name."""
    assert isinstance(dialect_for_url("sqlite:///x.db"), SqliteDialect)
    for url in ("postgresql://h/db", "postgres://h/db", "postgresql+psycopg://h/db"):
        assert isinstance(dialect_for_url(url), PostgresDialect)
    with pytest.raises(UsageError, match="'mysql'"):
        dialect_for_url("mysql://h/db")


def test_store_runs_on_the_dialect_of_its_url(store: Any, db_url: str) -> None:
    """The store's dialect is the one its URL names, and the engine agrees."""
    assert type(store.dialect) is type(dialect_for_url(db_url))
    assert type(dialect_of(store.engine)) is type(store.dialect)


def _writers(store: Any) -> list[tuple[str, str, int]]:
    w = S.writers.c
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(w.run_id, w.writer_id, w.acked_seq))]


def test_upsert_replaces_and_the_last_duplicate_wins(store: Any) -> None:
    """upsert inserts, replaces a stored row by its keys, and of two equal keys keeps the last."""
    d = store.dialect
    keys = ["run_id", "writer_id"]
    with store.db.tx() as conn:
        d.upsert(conn, S.writers, [{"run_id": "r", "writer_id": "a", "acked_seq": 1}], keys)
    rows = [
        {"run_id": "r", "writer_id": "a", "acked_seq": 2},
        {"run_id": "r", "writer_id": "b", "acked_seq": 3},
        {"run_id": "r", "writer_id": "b", "acked_seq": 4},
    ]
    with store.db.tx() as conn:
        d.upsert(conn, S.writers, rows, keys)
        d.upsert(conn, S.writers, [], keys)  # nothing to do is fine
    assert sorted(_writers(store)) == [("r", "a", 2), ("r", "b", 4)]


def test_insert_ignore_keeps_the_stored_row(store: Any) -> None:
    """insert_ignore adds new rows and leaves rows whose keys exist untouched."""
    d = store.dialect
    keys = ["run_id", "writer_id"]
    with store.db.tx() as conn:
        d.insert_ignore(conn, S.writers, [{"run_id": "r", "writer_id": "a", "acked_seq": 1}], keys)
        d.insert_ignore(
            conn,
            S.writers,
            [
                {"run_id": "r", "writer_id": "a", "acked_seq": 9},
                {"run_id": "r", "writer_id": "c", "acked_seq": 5},
            ],
            keys,
        )
    assert sorted(_writers(store)) == [("r", "a", 1), ("r", "c", 5)]


def _one(store: Any, expr: Any) -> Any:
    with store.engine.connect() as conn:
        return conn.execute(select(expr).where(S.runs.c.id == "r1")).scalar()


def test_json_access_agrees_on_both_backends(store: Any) -> None:
    """JSON type, number, text, boolean and array membership give the same answers on both."""
    store.put_run("r1", {"project": "p", "config": CONFIG, "tags": ["x", "y z"]})
    d, cfg = store.dialect, S.runs.c.config
    assert _one(store, d.json_number(cfg, ["lr"])) == 0.5
    assert _one(store, d.json_number(cfg, ["n"])) == 3
    assert _one(store, d.json_number(cfg, ["name"])) is None  # a string is not a number
    assert _one(store, d.json_number(cfg, ["missing"])) is None
    assert _one(store, d.json_number(cfg, ["nested", "a b", "c"])) == 7
    assert _one(store, d.json_text(cfg, ["name"])) == "adam"
    assert _one(store, d.json_type(cfg, ["missing"])) is None
    assert _one(store, d.json_type(cfg, ["none"])) == "null"
    assert _one(store, d.json_is_bool(cfg, ["flag"], True)) in (True, 1)
    assert _one(store, d.json_is_bool(cfg, ["flag"], False)) in (False, 0)
    assert _one(store, d.json_is_bool(cfg, ["off"], False)) in (True, 1)
    assert _one(store, d.json_is_bool(cfg, ["n"], True)) in (False, 0)
    tags = S.runs.c.tags
    assert _one(store, d.json_array_contains(tags, "y z")) in (True, 1)
    assert _one(store, d.json_array_contains(tags, "y")) in (False, 0)


def test_for_update_locks_only_where_needed(store: Any) -> None:
    """PostgreSQL reads the writer row FOR UPDATE; SQLite (one writer at a time) does not."""
    q = store.dialect.for_update(select(S.writers.c.acked_seq))
    sql = str(q.compile(store.engine))
    assert ("FOR UPDATE" in sql) == (store.dialect.name == "postgresql")


def test_postgres_connections_run_without_jit(pg_url: str) -> None:
    """Every pooled PostgreSQL connection has JIT off (it doubled the cost of chunk reads)."""
    from sqlalchemy import text

    from wisp.server.store.db import make_engine

    engine = make_engine(pg_url)
    try:
        with engine.connect() as a, engine.connect() as b:
            assert [c.execute(text("SHOW jit")).scalar() for c in (a, b)] == ["off", "off"]
    finally:
        engine.dispose()


def test_a_pooled_postgres_connection_that_died_while_idle_is_replaced(pg_url: str) -> None:
    """A pooled connection whose backend was terminated while it idled past the ping age
    is pinged when taken out and replaced: the read after it succeeds (no pre-ping on
    every checkout, still no dead connection handed out)."""
    from sqlalchemy import text

    from wisp.server.store import dialect as D
    from wisp.server.store.db import make_engine

    engine = make_engine(pg_url)
    try:
        victim, other = engine.connect(), engine.connect()
        pid = victim.execute(text("SELECT pg_backend_pid()")).scalar()
        victim.close()  # back in the pool, idle
        other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        other.commit()
        other.close()
        time.sleep(D._PING_IDLE + 0.1)
        with engine.connect() as a, engine.connect() as b:  # the dead one is among them
            pids = {c.execute(text("SELECT pg_backend_pid()")).scalar() for c in (a, b)}
        assert pid not in pids and len(pids) == 2
    finally:
        engine.dispose()


def test_reads_inside_reading_share_one_connection_on_postgres(store: Any) -> None:
    """Inside Db.reading() nested reads of the thread are one PostgreSQL connection (one
    checkout for the auth middleware's lookups); SQLite reads, and reads outside, keep
    their own."""

    def nested_share() -> bool:
        with store.db.read() as a, store.db.read() as b:
            return a is b

    with store.db.reading():
        assert nested_share() == (store.dialect.name == "postgresql")
    assert not nested_share()


def test_postgres_reads_run_in_autocommit(pg_url: str) -> None:
    """A PostgreSQL read connection holds no transaction open between statements (no BEGIN
    and ROLLBACK round trips); a write transaction is one."""
    from wisp.server import open_store

    s = open_store(pg_url)
    try:
        with s.db.read() as conn:
            conn.exec_driver_sql("SELECT 1")
            assert conn.connection.driver_connection.info.transaction_status == 0  # IDLE
        with s.db.tx() as conn:
            conn.exec_driver_sql("SELECT 1")
            assert conn.connection.driver_connection.info.transaction_status == 2  # INTRANS
    finally:
        s.close()


def test_a_write_inside_reading_uses_the_shared_connection(store: Any) -> None:
    """A write transaction inside Db.reading() runs on its PostgreSQL connection (a second
    checkout while holding one could wait on an emptied pool), commits, and the reads after
    it see it; on SQLite it keeps its own connection."""
    from sqlalchemy import text

    with store.db.reading():
        with store.db.read() as r:
            r.execute(text("SELECT 1")).scalar()
        with store.db.tx() as w:
            w.execute(text("INSERT INTO rate_limits (name, tokens, at) VALUES ('t', 1.0, 0.0)"))
            assert (w is r) == (store.dialect.name == "postgresql")
        with store.db.read() as r2:
            assert (
                r2.execute(text("SELECT tokens FROM rate_limits WHERE name = 't'")).scalar() == 1.0
            )
    with store.db.read() as r3:
        assert r3.execute(text("SELECT count(*) FROM rate_limits WHERE name = 't'")).scalar() == 1
