"""Fixtures of the upload tests: a real server process, and no run left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _sync_helpers import ServerProcess, need_server_package


@pytest.fixture
def server(tmp_path: Path) -> Any:
    """A real wisp server process on loopback with a SQLite database in ``tmp_path``."""
    need_server_package()
    srv = ServerProcess(tmp_path).start()
    yield srv
    srv.stop()


@pytest.fixture
def no_run() -> Any:
    """Leaves no current run behind, whatever the test did."""
    import wisp

    yield
    if wisp.run is not None:
        wisp.run.finish()
