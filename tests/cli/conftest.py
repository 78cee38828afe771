"""A real `wisp server` process for the CLI tests that talk to one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.cli._helpers import wisp_cli


def need_server() -> None:
    try:
        missing = find_spec("wisp.server") is None or find_spec("uvicorn") is None
    except ImportError:
        missing = True
    if missing:
        if os.environ.get("CI"):
            pytest.fail("the wisp server (wisp.server + the server extra) is required in CI")
        pytest.skip("wisp.server not in this build yet")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real `wisp server` process on SQLite (wisp.testing.Server); yields (url, write key).

    The key is made with `wisp server keys create --json`, as a user would.
    """
    need_server()
    from wisp.testing import Server

    db = f"sqlite:///{tmp_path / 'server.db'}"
    res = wisp_cli(
        "server", "keys", "create", "--db", db, "--scope", "write", "--json", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    key = json.loads(res.stdout)["key"]
    with Server(tmp_path, db=db, key=key) as srv:
        yield srv.url, srv.key
