"""Reading forks and rewound runs on real SQLite and PostgreSQL servers beyond ``x=step``: the
rows a rewind set aside through ``wisp.Api``, a fork's series against time and another
metric, grouped series, the history export, and the project's fork list."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import wisp
from tests.server import test_lineage as _lin

pytestmark = pytest.mark.timeout(180)
server = _lin.server  # the fixture: a real server on SQLite, or on a fresh PostgreSQL database
_sync = _lin._sync


def _post(server: Any, path: str, body: Any) -> Any:
    req = urllib.request.Request(
        f"{server.url}/api/v1{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _text(server: Any, path: str) -> str:
    req = urllib.request.Request(
        f"{server.url}/api/v1{path}", headers={"Authorization": f"Bearer {server.key}"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return str(resp.read().decode())
    except urllib.error.HTTPError as e:
        e.close()  # its socket now, not at a later test's garbage collection
        raise


def _family(d: str) -> tuple[wisp.Run, wisp.Run]:
    """A 100-step run (loss = step, epoch = 10 * step) and a fork of it at 50 logging 51..60
    (loss = -step, epoch = 10 * step), offline in ``d``."""
    opts = {"dir": d, "mode": "offline", "settings": {"system_metrics": False}}
    parent = wisp.init(project="lin", **opts)  # type: ignore[arg-type]
    for s in range(100):
        parent.log({"loss": float(s), "epoch": 10.0 * s}, step=s)
    parent.finish()
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", **opts)  # type: ignore[arg-type]
    for s in range(51, 61):
        fork.log({"loss": -float(s), "epoch": 10.0 * s}, step=s)
    fork.finish()
    return parent, fork


WANT = [float(s) for s in range(51)] + [-float(s) for s in range(51, 61)]


def test_rows_set_aside_are_scanned_and_restored_through_wisp_api(
    server: Any, tmp_path: Path
) -> None:
    """A run rewound to 80 on the server: scan_set_aside() reads the old 81..99 back,
    restore_set_aside() makes them a run reading 0..80 then the old rows, and the rewound
    run no longer lists them."""
    d = str(tmp_path)
    run = wisp.init(project="lin", dir=d, mode="offline")
    for s in range(100):
        run.log({"loss": float(s), "note": f"n{s}"}, step=s)
    run.finish()
    _sync(server, run.dir)
    back = wisp.init(resume_from=f"{run.id}?_step=80", dir=d, mode="offline")
    for s in range(81, 91):
        back.log({"loss": 1000.0 + s}, step=s)
    back.finish()
    _sync(server, run.dir)
    api = wisp.Api(server_url=server.url, api_key=server.key)
    me = api.run(f"lin/{run.id}")
    rows = list(me.scan_set_aside())
    assert [(r["_step"], r["loss"], r["_rewind"]) for r in rows] == [
        (s, float(s), 0) for s in range(81, 100)
    ]
    assert rows[0]["note"] == "n81" and "_timestamp" in rows[0]  # text values too
    assert list(me.scan_set_aside(rewind=1)) == []
    new = me.restore_set_aside()
    got = [(r["_step"], r["loss"]) for r in new.scan_history(keys=["loss"])]
    assert got == [(s, float(s)) for s in range(100)]
    assert me.set_aside() == [] and list(me.scan_set_aside()) == []
    kept = [(r["_step"], r["loss"]) for r in me.scan_history(keys=["loss"])]
    assert kept == [(s, float(s)) for s in range(81)] + [(s, 1000.0 + s) for s in range(81, 91)]
    api.close()


def test_a_forks_series_against_time_and_another_metric_read_through_its_parent(
    server: Any, tmp_path: Path
) -> None:
    """A fork's series against another metric, wall time and relative time hold its
    parent's 0..50 then its own 51..60, as against the step."""
    parent, fork = _family(str(tmp_path))
    _sync(server, fork.dir)
    (s,) = server.get(f"/series?runs={fork.id}&keys=loss&x=epoch&buckets=1000")["series"]
    assert s["raw"] and s["x"] == [10.0 * i for i in range(61)] and s["y"] == WANT
    assert s["fork_x"] == [500.0]  # the parent's epoch at the fork step: where charts mark it
    (t,) = server.get(f"/series?runs={fork.id}&keys=loss&x=time&buckets=1000")["series"]
    assert t["count"] == 61 and t["y"] == WANT and t["x"] == sorted(t["x"])
    assert t["fork_x"] == [t["x"][50]]
    (r,) = server.get(f"/series?runs={fork.id}&keys=loss&x=relative&buckets=1000")["series"]
    assert r["y"] == WANT and 0.0 <= r["x"][0] < 60.0  # from the parent's start
    assert r["fork_x"] == [r["x"][50]]
    (p,) = server.get(f"/series?runs={parent.id}&keys=loss&x=epoch&buckets=1000")["series"]
    assert p["y"] == [float(i) for i in range(100)]  # the parent as it was


def test_grouped_series_and_the_history_export_read_a_forks_view(
    server: Any, tmp_path: Path
) -> None:
    """A group holding only the fork aggregates its view (61 points, the parent's then its
    own); with the parent in the group, steps 0..50 count both runs; the CSV and JSON-lines
    history of the fork and the project's fork list name the parent's part."""
    parent, fork = _family(str(tmp_path))
    _sync(server, fork.dir)
    body = {"keys": ["loss"], "runs": [fork.id], "stats": ["mean", "min", "max"]}
    doc = _post(server, "/projects/lin/series/grouped", body)
    (g,) = doc["groups"]
    (s,) = g["series"]
    assert s["x"] == list(range(61)) and s["mean"] == WANT and s["n"] == [1] * 61
    both = _post(server, "/projects/lin/series/grouped", {**body, "runs": [parent.id, fork.id]})
    (s2,) = both["groups"][0]["series"]
    assert s2["n"][:51] == [2] * 51 and s2["n"][51:61] == [2] * 10 and s2["n"][61:] == [1] * 39
    assert s2["min"][55] == -55.0 and s2["max"][55] == 55.0 and s2["mean"][50] == 50.0
    lines = _text(server, f"/runs/{fork.id}/history?format=jsonl").splitlines()
    assert [json.loads(x)["loss"] for x in lines] == WANT
    csv_rows = _text(server, f"/runs/{fork.id}/history?format=csv").splitlines()
    assert csv_rows[0].startswith("_step,_timestamp") and len(csv_rows) == 62
    assert server.get("/projects/lin/forks") == {
        "forks": [{"key": fork.id, "parent_key": parent.id, "step": 50}]
    }


def test_a_forks_step_series_equals_a_plain_runs_holding_its_view(tmp_path: Path) -> None:
    """Straight through the store: a fork at 30,000 of a 100,000-step run (fork step inside a
    chunk) reads, bucket for bucket and in zoomed windows, as a plain run holding the same
    points, alone and in grouped series (with its parent too); a fork of the fork at 45,000
    as well."""
    from wisp.server import open_store
    from wisp.server.series.buckets import series
    from wisp.server.series.grouped import grouped_series
    from wisp.server.store.ingest import prepare_records

    def put(run: str, rows: list[list[Any]], fork: dict[str, Any] | None = None) -> None:
        store.put_run(run, {"project": "p", "name": run})
        recs: list[dict[str, Any]] = [{"type": 1, "data": {"project": "p", "name": run}}]
        if fork:
            recs.append({"type": 13, "data": {"kind": "fork", "parent_project": "p", **fork}})
        recs += [
            {"type": 3, "data": {"rows": rows[i : i + 20_000]}} for i in range(0, len(rows), 20_000)
        ]
        store.ingest(run, "w", 0, prepare_records(recs))

    def row(s: int, v: float) -> list[Any]:
        return [s, 1.0 + s, {"loss": v}]

    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    try:
        par = [row(s, float(s % 997)) for s in range(100_000)]
        own = [row(s, -float(s % 101)) for s in range(30_001, 50_000)]
        own2 = [row(s, float("nan") if s % 5000 == 0 else 0.5 * s) for s in range(45_001, 70_000)]
        put("par", par)
        put("kid", own, {"parent_id": "par", "step": 30_000})
        put("grand", own2, {"parent_id": "kid", "step": 45_000})
        put("flat", par[:30_001] + own)
        put("flat2", par[:30_001] + own[: 45_001 - 30_001] + own2)
        for fork, flat in (("kid", "flat"), ("grand", "flat2")):
            for kw in (
                {},
                {"lo": 29_000.0, "hi": 31_000.0},
                {"lo": 10.0, "hi": 60_000.0},
                {"after": 40_000.0},
            ):
                for buckets in (7, 1000, 5000):
                    (got,) = series(store, [fork], ["loss"], buckets=buckets, **kw)  # type: ignore[arg-type]
                    (want,) = series(store, [flat], ["loss"], buckets=buckets, **kw)  # type: ignore[arg-type]
                    marks = got.pop("fork_x")
                    assert marks == ([30_000.0] if fork == "kid" else [30_000.0, 45_000.0])
                    assert {**got, "run": flat} == want, (fork, kw, buckets)
                    lo_hi = {k: v for k, v in kw.items() if k != "after"}
                    for runs in ([fork], ["par", fork], [fork, "kid"]):
                        g = {"keys": ["loss"], "group_by": [], "buckets": buckets, **lo_hi}
                        got_g = grouped_series(store, "p", runs=runs, **g)  # type: ignore[arg-type]
                        flat_runs = [flat if r == fork else r for r in runs]
                        want_g = grouped_series(store, "p", runs=flat_runs, **g)  # type: ignore[arg-type]
                        assert got_g["grids"] == want_g["grids"], (fork, runs, kw, buckets)
                        assert got_g["groups"][0]["series"] == want_g["groups"][0]["series"]
    finally:
        store.close()


def test_rows_set_aside_and_fork_lists_follow_read_rights(tmp_path: Path) -> None:
    """Bob may not read the rows Alice's private run set aside (404, as the run itself), and
    his project's fork list leaves out a fork whose parent is in a project he may no longer
    read."""
    import urllib.error

    from wisp.server.store.facade import open_store
    from wisp.testing import Server

    d = str(tmp_path)
    with Server(tmp_path / "srv") as srv:
        alice, bob = _lin.alice_and_bob(srv)
        run = wisp.init(project="secret", dir=d, mode="offline")
        for s in range(10):
            run.log({"loss": float(s)}, step=s)
        run.finish()
        wisp.init(resume_from=f"{run.id}?_step=5", dir=d, mode="offline").finish()
        srv.key = alice
        _sync(srv, run.dir)
        assert len(_text(srv, f"/runs/{run.id}/set-aside/0/history").splitlines()) == 4
        srv.key = bob
        with pytest.raises(urllib.error.HTTPError) as err:
            _text(srv, f"/runs/{run.id}/set-aside/0/history")
        assert err.value.code in (403, 404)
        store = open_store(srv.db_url)
        store.access.set_project("secret", None, "public-read")
        fork = wisp.init(fork_from=f"{run.id}?_step=3", project="mine", dir=d, mode="offline")
        fork.finish()
        _sync(srv, fork.dir)
        want = {"forks": [{"key": fork.id, "parent_key": run.id, "step": 3}]}
        assert srv.get("/projects/mine/forks") == want
        store.access.set_project("secret", None, "private")
        store.close()
        assert srv.get("/projects/mine/forks") == {"forks": []}
