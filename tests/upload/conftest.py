"""Fixtures of the upload tests: a real server process on each backend, and no run left behind."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _sync_helpers import need_server_package

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A real wisp server process on loopback (reads open), on SQLite in ``tmp_path`` or on a
    fresh PostgreSQL database."""
    need_server_package()
    import psycopg

    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if request.param == "postgresql":
            try:
                db = stack.enter_context(temporary_postgres_database(PG_HOST))
            except psycopg.OperationalError as e:
                pytest.fail(f"PostgreSQL at {PG_HOST} is required by the upload suite: {e}")
        yield stack.enter_context(Server(tmp_path, db=db, no_auth=True))


@pytest.fixture
def no_run() -> Any:
    """Leaves no current run behind, whatever the test did."""
    import wisp

    yield
    if wisp.run is not None:
        wisp.run.finish()
