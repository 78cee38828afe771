"""``wisp.sync()`` of forks and rewound runs made offline, against real servers (both backends)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import wisp

pytestmark = pytest.mark.timeout(120)


def test_syncing_a_fork_uploads_its_parent_first(server: Any, tmp_path: Path) -> None:
    """A fork made offline before its parent was uploaded: syncing the fork alone uploads the
    parent first, then the fork with its LINEAGE record."""
    d = str(tmp_path)
    parent = wisp.init(project="lin", dir=d, mode="offline")
    for i in range(100):
        parent.log({"loss": float(i)})
    parent.finish()
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d, mode="offline")
    for i in range(51, 61):
        fork.log({"loss": -float(i)})
    fork.finish()
    results = wisp.sync([fork.dir], server_url=server.url, api_key=server.key)  # type: ignore[list-item]
    assert [r.run_id for r in results] == [parent.id, fork.id]
    assert all(r.done and r.error is None for r in results)
    assert server.points(parent.id, "loss") == [(s, float(s)) for s in range(100)]
    want = [(s, float(s)) for s in range(51)] + [(s, -float(s)) for s in range(51, 61)]
    assert server.points(fork.id, "loss") == want  # read through the parent
    again = wisp.sync([fork.dir], server_url=server.url, api_key=server.key)  # type: ignore[list-item]
    assert [r.skipped for r in again] == ["up to date", "up to date"]


def test_a_synced_run_rewound_offline_uploads_its_new_segment(server: Any, tmp_path: Path) -> None:
    """A run already on the server, rewound offline to 80 with 81..90 logged again, syncs its
    new segment: the server holds 0..80 and the new 81..90, the old 91..99 set aside."""
    d = str(tmp_path)
    run = wisp.init(project="lin", dir=d, mode="offline")
    for i in range(100):
        run.log({"loss": float(i)})
    run.finish()
    wisp.sync([run.dir], server_url=server.url, api_key=server.key)  # type: ignore[list-item]
    back = wisp.init(resume_from=f"{run.id}?_step=80", dir=d, mode="offline")
    for i in range(81, 91):
        back.log({"loss": 1000.0 + i})
    back.finish()
    (res,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key)  # type: ignore[list-item]
    assert res.done and res.error is None and res.records > 0
    want = [(s, float(s)) for s in range(81)] + [(s, 1000.0 + s) for s in range(81, 91)]
    assert server.points(run.id, "loss") == want


def test_an_online_fork_of_an_offline_run_uploads_the_parent_first(
    server: Any, tmp_path: Path
) -> None:
    """init(fork_from=...) online, from a run only on this machine: the parent is uploaded
    before the fork's own upload starts."""
    d = str(tmp_path)
    parent = wisp.init(project="lin", dir=d, mode="offline")
    for i in range(20):
        parent.log({"loss": float(i)})
    parent.finish()
    fork = wisp.init(
        fork_from=f"{parent.id}?_step=10",
        dir=d,
        mode="online",
        settings={"server_url": server.url, "api_key": server.key},
    )
    assert server.points(parent.id, "loss") == [(s, float(s)) for s in range(20)]
    fork.log({"loss": -1.0})
    fork.finish()
    assert server.points(fork.id, "loss") == [(s, float(s)) for s in range(11)] + [(11, -1.0)]
    assert server.get(f"/runs/{parent.id}")["state"] == "finished"
