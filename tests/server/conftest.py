"""Fixtures for the server suite: every store-backed test runs on SQLite and on PostgreSQL.

PostgreSQL is the real server on 127.0.0.1:5432 (user postgres, trust auth).  A
fresh database is created for the test session and every test starts from empty
tables.  If PostgreSQL is unreachable the PostgreSQL tests FAIL; they never skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped at the end."""
    import psycopg

    from wisp.testing import temporary_postgres_database

    try:
        with temporary_postgres_database(PG_HOST) as url:
            yield url
    except psycopg.OperationalError as e:
        pytest.fail(f"PostgreSQL at {PG_HOST} is required by the server suite: {e}")


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database URL of the backend under test (PostgreSQL: emptied before the test)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'wisp.db'}"
    url: str = request.getfixturevalue("pg_url")
    from sqlalchemy import text

    from wisp.server.store.db import make_engine, migrate
    from wisp.server.store.schema import metadata

    engine = make_engine(url)
    migrate(engine)
    with engine.begin() as conn:
        names = ", ".join(t.name for t in metadata.sorted_tables)
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY"))
    engine.dispose()
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[Any]:
    from wisp.server import open_store

    s = open_store(db_url)
    yield s
    s.close()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Any:
    from wisp.server import ServerSettings

    return ServerSettings(
        db=db_url,
        media_dir=str(tmp_path / "media"),
        static_dir=str(tmp_path / "static"),
        max_body_bytes=2 * 1024 * 1024,
        max_media_bytes=1024 * 1024,
    )


@pytest.fixture
def app(settings: Any, store: Any) -> Any:
    from wisp.server import create_app

    return create_app(settings, store=store)


@pytest.fixture
def keys(store: Any) -> dict[str, str]:
    """One API key per scope, as ``Authorization`` header values."""
    return {scope: store.create_key(scope, f"test {scope}")[1] for scope in ("read", "write")}


class Api:
    """A small client over Starlette's TestClient that sends a key."""

    def __init__(self, app: Any, key: str) -> None:
        from starlette.testclient import TestClient

        self.c = TestClient(app)
        self.h = {"Authorization": f"Bearer {key}"}

    def __getattr__(self, method: str) -> Any:
        fn = getattr(self.c, method)

        def call(url: str, **kw: Any) -> Any:
            kw["headers"] = {**self.h, **kw.get("headers", {})}
            return fn(url, **kw)

        return call


@pytest.fixture
def api(app: Any, keys: dict[str, str]) -> Api:
    """A client holding a write key."""
    return Api(app, keys["write"])


def history(rows: list[tuple[int, float, dict[str, Any]]]) -> dict[str, Any]:
    return {"type": 3, "data": {"rows": [list(r) for r in rows]}}


def blob_namings(sha: str) -> list[dict[str, Any]]:
    """Every way a media value can name a blob: each media type, a gallery, a table's own
    file and an image inside a table cell (docs/server.md, "Blobs")."""
    img = {"_type": "image", "sha256": sha, "path": "media/x.png"}
    kinds = ("html", "object3d", "video", "audio", "table")
    return [
        img,
        {"_type": "images", "items": [img]},
        *({"_type": k, "sha256": sha} for k in kinds),
        {"_type": "table", "columns": ["a"], "data": [[img]]},
    ]
