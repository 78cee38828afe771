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


def alice_and_bob(srv: Any) -> tuple[str, str]:
    """Write keys of two new users of server ``srv``, alice and bob."""
    from wisp.server import keys_create, users_add

    for name in ("alice", "bob"):
        users_add(name, db=srv.db_url)
    alice = keys_create("write", "a", db=srv.db_url, user="alice")[1]
    return alice, keys_create("write", "b", db=srv.db_url, user="bob")[1]


def _parent_and_fork(d: str) -> tuple[wisp.Run, wisp.Run]:
    """A 100-step run logged offline in ``d`` and a fork of it at 50 that logs 51..60."""
    parent = wisp.init(project="lin", dir=d, mode="offline")
    _log(parent, range(100), float)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d, mode="offline")
    _log(fork, range(51, 61), lambda s: -float(s))
    return parent, fork


def test_a_fork_reads_through_its_parent_on_the_server(server: Any, tmp_path: Path) -> None:
    """A fork at 50 of a 100-step run, and a fork of it at 55, read back from the server's
    series as the parent's 0..50 then their own steps; the parent is unchanged."""
    d = str(tmp_path)
    parent, fork = _parent_and_fork(d)
    grand = wisp.init(fork_from=f"{fork.id}?_step=55", dir=d, mode="offline")
    _log(grand, range(56, 58), lambda s: 1000.0 + s)
    _sync(server, grand.dir)  # parents first
    want = [(s, float(s)) for s in range(51)] + [(s, -float(s)) for s in range(51, 61)]
    assert server.points(fork.id, "loss") == want
    assert server.points(grand.id, "loss") == [*want[:56], (56, 1056.0), (57, 1057.0)]
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
    assert server.points(run.id, "loss") == [*want[:11], (11, -1.0), (12, -1.0)]


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


def test_forks_need_read_rights_on_the_parent_and_never_write_it(tmp_path: Path) -> None:
    """Bob forks Alice's private run: the server refuses the fork's LINEAGE record (the
    uploader sets it aside; the fork's own points are there, not Alice's); once Alice's
    project is readable to him the record is taken and the fork reads through, while the
    parent, his to read only, is never written."""
    from wisp.server.store.facade import open_store
    from wisp.testing import Server

    d = str(tmp_path)
    with Server(tmp_path / "srv") as srv:
        alice, bob = alice_and_bob(srv)
        parent = wisp.init(project="secret", dir=d, mode="offline")
        _log(parent, range(10), float)
        wisp.sync([parent.dir], server_url=srv.url, api_key=alice)  # type: ignore[list-item]
        fork = wisp.init(fork_from=f"{parent.id}?_step=5", project="mine", dir=d, mode="offline")
        _log(fork, range(6, 8), lambda s: -1.0)
        got = wisp.sync([fork.dir], server_url=srv.url, api_key=bob)  # type: ignore[list-item]
        assert [r.skipped for r in got] == ["up to date", None]  # Alice's run: not resent
        res = got[1]
        assert res.done and res.rejected == 1  # the LINEAGE record, set aside
        srv.key = bob
        assert srv.points(fork.id, "loss") == [(6, -1.0), (7, -1.0)]
        store = open_store(srv.db_url)
        store.access.set_project("secret", None, "public-read")
        store.close()
        got = wisp.sync(
            [fork.dir],
            server_url=srv.url,
            api_key=bob,
            retry_rejected=True,  # type: ignore[list-item]
        )
        assert got[1].rejected == 0
        assert srv.points(fork.id, "loss") == [(s, float(s)) for s in range(6)] + [
            (6, -1.0),
            (7, -1.0),
        ]
        srv.key = alice
        assert srv.points(parent.id, "loss") == [(s, float(s)) for s in range(10)]


def test_wisp_api_reads_a_fork_and_a_rewound_run_through_the_server(
    server: Any, tmp_path: Path
) -> None:
    """wisp.Api over the server: scan_history, history and the long-table export give a
    fork's view (the parent's 0..50, then its own) and a rewound run's kept rows."""
    d = str(tmp_path)
    parent, fork = _parent_and_fork(d)
    back = wisp.init(resume_from=f"{parent.id}?_step=80", dir=d, mode="offline")
    _log(back, range(81, 91), lambda s: 1000.0 + s)
    _sync(server, fork.dir, parent.dir)
    api = wisp.Api(server_url=server.url, api_key=server.key)
    want = [(s, float(s)) for s in range(51)] + [(s, -float(s)) for s in range(51, 61)]
    run = api.run(f"lin/{fork.id}")
    assert [(r["_step"], r["loss"]) for r in run.scan_history(keys=["loss"])] == want
    rows = run.history(keys=["loss"], pandas=False, samples=1000)
    assert [(r["_step"], r["loss"]) for r in rows] == want
    kept = [(s, float(s)) for s in range(81)] + [(s, 1000.0 + s) for s in range(81, 91)]
    got = api.run(f"lin/{parent.id}").scan_history(keys=["loss"])
    assert [(r["_step"], r["loss"]) for r in got] == kept
    pd = pytest.importorskip("pandas")
    table = api.runs("lin").histories()
    assert isinstance(table, pd.DataFrame)
    mine = table[table["run_id"] == fork.id]
    assert list(zip(mine["step"], mine["loss"], strict=True)) == want
    api.close()


def test_the_lineage_endpoint_and_wisp_api_name_parents_forks_and_rows_set_aside(
    server: Any, tmp_path: Path
) -> None:
    """GET /runs/{id}/lineage and wisp.Api over the server: run.parent, fork_step, forks()
    and set_aside() of a run forked, then rewound."""
    d = str(tmp_path)
    parent = wisp.init(project="lin", dir=d, mode="offline")
    _log(parent, range(100), float)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d, mode="offline")
    _log(fork, range(51, 53), float)
    back = wisp.init(resume_from=f"{parent.id}?_step=80", dir=d, mode="offline")
    _log(back, range(81, 83), float)
    _sync(server, fork.dir, parent.dir)
    doc = server.get(f"/runs/{fork.id}/lineage")
    assert doc["parent"] == {"id": parent.id, "project": "lin", "key": parent.id, "step": 50}
    assert doc["forks"] == [] and doc["set_aside"] == []
    doc = server.get(f"/runs/{parent.id}/lineage")
    assert doc["parent"] is None
    assert [(f["id"], f["step"]) for f in doc["forks"]] == [(fork.id, 50)]
    assert doc["set_aside"] == [
        {"rewind": 0, "step": 80, "points": 19, "min_step": 81, "max_step": 99}
    ]
    api = wisp.Api(server_url=server.url, api_key=server.key)
    run = api.run(f"lin/{fork.id}")
    assert run.parent is not None and run.parent.id == parent.id and run.fork_step == 50
    top = api.run(f"lin/{parent.id}")
    assert [r.id for r in top.forks()] == [fork.id] and top.parent is None
    assert top.set_aside() == [
        {"rewind": 0, "step": 80, "rows": 19, "min_step": 81, "max_step": 99}
    ]
    api.close()


def test_a_rewind_in_the_store_splits_a_chunk_and_deleting_the_run_forgets_it(
    tmp_path: Path,
) -> None:
    """Straight through the store: 600 points (chunks of 256), a rewind to 300 (inside a
    chunk), 301..302 again: the series holds 0..300 and the new two; the points set aside are
    under a shadow key no run has; deleting the run deletes them and its lineage rows."""
    from sqlalchemy import func, select

    from wisp.server import open_store
    from wisp.server.series.buckets import series
    from wisp.server.store import lineage
    from wisp.server.store import schema as S
    from wisp.server.store.edit import delete_run
    from wisp.server.store.ingest import prepare_records

    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    try:
        store.put_run("r", {"project": "p", "name": "r"})
        rows = [[s, 1.0 + s, {"loss": float(s)}] for s in range(600)]
        rewind = {"run_id": "r", "last_step": 300, "rewind": {"step": 300}}
        recs = [
            {"type": 1, "data": {"project": "p", "name": "r"}},
            {"type": 3, "data": {"rows": rows}},
            {"type": 12, "data": rewind},
            {"type": 3, "data": {"rows": [[301, 9.0, {"loss": -1.0}], [302, 9.0, {"loss": -2.0}]]}},
        ]
        store.ingest("r", "w", 0, prepare_records(recs))  # one batch: the rewind in the middle
        (s,) = series(store, ["r"], ["loss"], buckets=10_000)
        assert s["x"] == list(range(303)) and s["y"][300] == 300.0 and s["y"][301:] == [-1.0, -2.0]
        with store.engine.connect() as conn:
            (shadow,) = conn.execute(select(lineage.set_aside.c.shadow_id)).scalars()
            n = conn.execute(
                select(func.sum(S.chunks.c.n))
                .select_from(S.chunks.join(S.metric_keys, S.metric_keys.c.id == S.chunks.c.key_id))
                .where(S.metric_keys.c.run_id == shadow)
            ).scalar()
        assert n == 299  # the old 301..599
        assert delete_run(store, "r")
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(S.chunks)).scalar() == 0
            assert conn.execute(select(func.count()).select_from(lineage.set_aside)).scalar() == 0
    finally:
        store.close()


def test_a_forks_summary_on_the_server_covers_its_parents_part(tmp_path: Path) -> None:
    """Straight through the store: a fork's SUMMARY record (its own rows) gains the last value
    at or before the fork step of each key only its parent logged."""
    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    try:
        store.put_run("par", {"project": "p", "name": "par"})
        rows = [[s, 1.0, {"loss": float(s), "acc": s / 10}] for s in range(10)]
        recs = [
            {"type": 1, "data": {"project": "p", "name": "par"}},
            {"type": 3, "data": {"rows": rows}},
        ]
        store.ingest("par", "w", 0, prepare_records(recs))
        store.put_run("kid", {"project": "p", "name": "kid"})
        fork = {"kind": "fork", "parent_id": "par", "parent_project": "p", "step": 5}
        recs = [
            {"type": 1, "data": {"project": "p", "name": "kid"}},
            {"type": 13, "data": fork},
            {"type": 3, "data": {"rows": [[6, 2.0, {"loss": -1.0}]]}},
            {"type": 4, "data": {"summary": {"loss": -1.0}}},
        ]
        store.ingest("kid", "w", 0, prepare_records(recs))
        got = store.get_run("kid")
        assert got is not None and got["summary"] == {"loss": -1.0, "acc": 0.5}
        assert store.get_run("par")["summary"] == {}  # type: ignore[index]
    finally:
        store.close()
