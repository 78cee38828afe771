"""A fork's summary and view on the server against a plain run's and the run files': its
summary is recomputed over its view, and a rewind of its parent never changes what it reads
(real servers on SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import wisp
from tests.server import test_lineage as _lin

pytestmark = pytest.mark.timeout(180)
server = _lin.server  # the fixture: a real server on SQLite, or on a fresh PostgreSQL database
_sync = _lin._sync


def _metrics(run: wisp.Run) -> None:
    run.define_metric("loss", summary="min")
    run.define_metric("acc", summary="mean,max")


def _rows(run: wisp.Run, steps: range, sign: float) -> None:
    for s in steps:
        run.log({"loss": sign * (100 - s), "acc": s / 7, "lr": 0.1 * s}, step=s)
        if s % 10 == 0:
            img = wisp.Image(np.full((4, 4, 3), s, np.uint8))
            run.log({"phase": f"p{s}", "warm": s < 20, "tags": [s, "x"], "img": img}, step=s)


def _summary(server: Any, run_id: str) -> dict[str, Any]:
    got = server.get(f"/runs/{run_id}")["summary"]
    return {k: v for k, v in got.items() if not k.startswith("_")}


def test_a_forks_summary_equals_a_plain_runs_and_the_run_files(server: Any, tmp_path: Path) -> None:
    """A fork at 50 of a run defining min, mean and max kinds: the server's summary of the
    fork equals a plain run's holding the same points, and the local reader's of the fork
    (text, booleans, lists and media too); a key the user set by hand stays."""
    d = str(tmp_path)
    parent = wisp.init(project="sum", dir=d, mode="offline")
    _metrics(parent)
    _rows(parent, range(100), 1.0)
    parent.finish()
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d, mode="offline")
    for s in range(51, 61):
        fork.log({"loss": 200.0 + s, "acc": -s / 3}, step=s)
    fork.summary["note"] = 7
    fork.finish()
    plain = wisp.init(project="sum", dir=d, mode="offline")
    _metrics(plain)
    _rows(plain, range(51), 1.0)
    for s in range(51, 61):
        plain.log({"loss": 200.0 + s, "acc": -s / 3}, step=s)
    plain.finish()
    _sync(server, fork.dir, plain.dir)
    got = _summary(server, fork.id)
    assert got == {**_summary(server, plain.id), "note": 7}
    assert got["loss"] == 50.0 and got["lr"] == 5.0  # the parent's part: min, and a last value
    assert (got["phase"], got["warm"], got["tags"]) == ("p50", False, [50, "x"])  # other kinds
    local = {k: v for k, v in wisp.open_run(fork.dir).summary.items() if not k.startswith("_")}
    assert got["img"]["sha256"] and got["img"]["path"] == local["img"]["path"]  # media too
    assert {k: v for k, v in got.items() if k != "img"} == {
        k: v for k, v in local.items() if k != "img"
    }


def test_a_parents_rewind_below_the_fork_step_leaves_the_forks_view(
    server: Any, tmp_path: Path
) -> None:
    """A parent rewound to 30, then to 10, after a fork at 50 (synced before, between and
    after the rewinds): the fork reads 0..50 as they were when it was made, on the server
    and in the run files, and its summary is unchanged, even once the first rewind's points
    are restored as a run of their own; the parent reads its new rows."""
    d = str(tmp_path)
    parent = wisp.init(project="rw", dir=d, mode="offline")
    _lin._log(parent, range(100), float)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d, mode="offline")
    _lin._log(fork, range(51, 61), lambda s: -float(s))
    _sync(server, fork.dir)
    want = [(s, float(s)) for s in range(51)] + [(s, -float(s)) for s in range(51, 61)]
    before = _summary(server, fork.id)
    for step in (30, 10):
        back = wisp.init(resume_from=f"{parent.id}?_step={step}", dir=d, mode="offline")
        _lin._log(back, range(step + 1, step + 30), lambda s: 1000.0 + s)
        _sync(server, parent.dir)
        assert server.points(fork.id, "loss") == want
        local = [(r["_step"], r["loss"]) for r in wisp.open_run(fork.dir).history()]
        assert local == want
    assert server.points(parent.id, "loss")[9:13] == [
        (9, 9.0),
        (10, 10.0),
        (11, 1011.0),
        (12, 1012.0),
    ]
    assert _summary(server, fork.id) == before
    api = wisp.Api(server_url=server.url, api_key=server.key)
    me = api.run(f"rw/{parent.id}")
    assert [a["rewind"] for a in me.set_aside()] == [0, 1]
    me.restore_set_aside(rewind=0)  # the points the fork reads move to a run of their own
    assert [a["rewind"] for a in me.set_aside()] == [1]
    assert server.points(fork.id, "loss") == want
    again = wisp.init(resume_from=f"{parent.id}?_step=5", dir=d, mode="offline")
    _lin._log(again, range(6, 8), lambda s: -1.0)
    _sync(server, parent.dir)
    assert [a["rewind"] for a in me.set_aside()] == [1, 2]  # numbers are never reused
    assert server.points(fork.id, "loss") == want
    api.close()
    doc = server.get(f"/series?runs={fork.id}&keys=loss&x=step&buckets=1000")
    assert doc["series"][0]["count"] == 61
