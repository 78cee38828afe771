"""Fixtures of the artifact tests: a private cache, real files, a real server on each backend."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


@pytest.fixture(autouse=True)
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Each test gets its own artifact cache (the shared one is never touched)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("WISP_CACHE_DIR", str(path))
    return path


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A small dataset folder: 20 files in two levels, one empty file."""
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    for i in range(10):
        (root / f"f{i}.txt").write_text(f"file {i}\n" * (i + 1))
        (root / "sub" / f"g{i}.bin").write_bytes(bytes([i]) * (1000 + i))
    (root / "empty").write_bytes(b"")
    return root


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A real wisp server process on loopback, on SQLite or a fresh PostgreSQL database."""
    import psycopg

    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if request.param == "postgresql":
            try:
                db = stack.enter_context(temporary_postgres_database(PG_HOST))
            except psycopg.OperationalError as e:
                pytest.fail(f"PostgreSQL at {PG_HOST} is required by the artifact suite: {e}")
        yield stack.enter_context(Server(tmp_path / "server", db=db))


@pytest.fixture
def online(server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Runs started by the test are online against ``server``."""
    monkeypatch.setenv("WISP_SERVER_URL", server.url)
    monkeypatch.setenv("WISP_API_KEY", server.key)
    monkeypatch.setenv("WISP_MODE", "online")
    return server
