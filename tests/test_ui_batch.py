"""`wisp ui`'s batch import of small finished runs (wisp._ui_batch): the same rows as the
per-run upload, cursors that make a restart send nothing, grown runs read again, and a run
the server refuses costing only itself."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp._rundir import CURSOR_FILE, Cursor
from wisp._runfile import HEADER, RecordType, encode_record, iter_records

pytest.importorskip("uvicorn")

from wisp._ui import LocalImporter, _free_port, _LocalServer
from wisp._ui_local import InProcessTransport, StatIndex
from wisp._upload._transport import ApiClient
from wisp._upload._uploader import Uploader

SETTINGS = {"system_metrics": False, "console": "off", "git": False}


def make_runs(root: Path, n: int, first: int = 0) -> None:
    """Runs with what a run file commonly holds: config, tags, notes, group, a metric
    definition, numbers (NaN and infinities among them), strings, a summary."""
    for i in range(first, first + n):
        run = wisp.init(
            project="p",
            name=f"r{i}",
            dir=str(root),
            config={"lr": 0.1 * (i + 1), "opt": {"name": "adam"}},
            tags=["a", f"t{i}"],
            notes="n",
            group="g",
            job_type="train",
            settings=SETTINGS,
        )
        run.define_metric("loss", summary="min")
        for s in range(30):
            loss = [math.nan, math.inf, -math.inf][s % 3] if s % 10 == 0 else 1.0 / (s + 1)
            wisp.log({"loss": loss, "acc": s / 30, "phase": "warm" if s < 5 else "on"}, step=s)
        run.summary["best"] = i
        run.finish()


def _server(data: Path) -> _LocalServer:
    return _LocalServer(
        f"sqlite:///{data / 'wisp.db'}", str(data / "media"), "127.0.0.1", _free_port("127.0.0.1")
    )


def _import(server: _LocalServer, root: Path, data: Path, *, batch: bool = True) -> LocalImporter:
    """A full import as `wisp ui` runs it (batch importer or not); closed when it returns."""
    transport = InProcessTransport(server.app, server.url)
    imp = LocalImporter(
        [str(root)],
        lambda: ApiClient(server.url, server.write_key, transport=transport),
        index=StatIndex(str(data / "ui-index.json")),
        batch=server.batch_importer() if batch else None,
    )
    try:
        imp.poll()
        while imp.busy or imp.pending:
            imp.poll()
    finally:
        imp.close()
        transport.shutdown()
    return imp


def _rows(db: Path) -> dict[str, Any]:
    """The rows an upload writes, without what differs by when it ran (last_seen, gen,
    creation times of projects, audit times) or by row id (metric keys by name)."""
    import sqlalchemy as sa

    eng = sa.create_engine(f"sqlite:///{db}")
    out: dict[str, Any] = {}
    with eng.connect() as c:

        def q(sql: str) -> list[Any]:
            return sorted(tuple(r) for r in c.execute(sa.text(sql)))

        out["runs"] = q(
            "SELECT id, given_id, project, name, state, tags, notes, run_group, job_type, "
            "config, summary, meta, created_at, finished_at, exit_code, owner_id FROM runs"
        )
        out["writers"] = q("SELECT run_id, writer_id, acked_seq, user_id FROM writers")
        out["chunks"] = q(
            "SELECT k.run_id, k.key, c.s0, c.s1, c.n, c.vmin, c.vmax, c.first_v, c.last_v, "
            "c.nonfinite, c.data FROM chunks c JOIN metric_keys k ON k.id = c.key_id"
        )
        out["extras"] = q("SELECT run_id, step, time, data FROM extras")
        out["events"] = q("SELECT run_id, type, data FROM events")
        out["metrics"] = q("SELECT run_id, name, spec FROM run_metrics")
        out["projects"] = q("SELECT name, owner_user, owner_team, visibility FROM projects")
        out["audit"] = q("SELECT actor, action, target, status, addr FROM audit")
    eng.dispose()
    return out


def test_batch_import_writes_the_rows_the_per_run_upload_writes(tmp_path: Path) -> None:
    """The same run directories imported one by one over the API and by the batch importer
    leave the same runs, writers, points, extras, metric specs, projects and audit entries."""
    root = tmp_path / "work"
    make_runs(root, 5)
    rows = {}
    for batch in (False, True):  # per-run first: its cursor is for another server
        data = tmp_path / f"data-{batch}"
        data.mkdir()
        server = _server(data)
        try:
            imp = _import(server, root, data, batch=batch)
            assert imp.imported == 5 and imp.batched == (5 if batch else 0) and imp.errors == 0
        finally:
            server.stop()
        rows[batch] = _rows(data / "wisp.db")
    assert len(rows[True]["runs"]) == 5 and len(rows[True]["chunks"]) == 10
    assert any(r[4] == "finished" for r in rows[True]["runs"])
    assert rows[True] == rows[False]


def test_a_restart_sends_nothing_and_a_grown_run_is_read_again(tmp_path: Path) -> None:
    """After a batch import every run's cursor says the server has its whole file; a restart
    opens no run, an uploader started on a run sends nothing, and a run that grew since is
    read again and its new record reaches the server."""
    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    make_runs(root, 4)
    server = _server(data)
    try:
        first = _import(server, root, data)
        assert first.imported == 4 and first.batched == 4
        dirs = sorted((root / "wisp").iterdir())
        for d in dirs:
            cur = Cursor.read(str(d))
            assert cur.server == server.url and cur.done
            assert cur.offset == (d / "run.wisp").stat().st_size
            assert cur.acked_seq == len(list(iter_records(d / "run.wisp"))) - 1

        assert _import(server, root, data).opened == 0  # the stat index: nothing opened

        transport = InProcessTransport(server.app, server.url)
        up = Uploader(str(dirs[0]), ApiClient(server.url, server.write_key, transport=transport))
        assert up.run(final=lambda: True) and up.records_sent == 0
        transport.shutdown()

        with open(dirs[1] / "run.wisp", "ab") as f:
            f.write(encode_record(RecordType.SUMMARY, b'{"summary":{"late":7}}'))
        again = _import(server, root, data)
        assert again.opened == 1 and again.imported == 1 and again.batched == 0
        store = server._store
        key = store.runs.key_of("p", wisp.open_run(dirs[1]).id)
        assert key is not None
        run = store.get_run(key)
        assert run is not None and run["summary"] == {"late": 7}
    finally:
        server.stop()


def _bad_run(root: Path) -> Path:
    """A finished run file whose RUN record names a project the server refuses."""
    d = root / "wisp" / "run-20260101_000000-bad00001"
    d.mkdir(parents=True)
    run = {"run_id": "bad00001", "writer_id": "w" * 16, "project": "no/two/slashes", "name": "b"}
    recs = [
        (RecordType.RUN, run),
        (RecordType.FINISH, {"state": "finished", "exit_code": 0, "finished_at": 1.7e9}),
    ]
    body = b"".join(encode_record(t, json.dumps(p).encode()) for t, p in recs)
    (d / "run.wisp").write_bytes(HEADER + body)
    return d


def test_a_refused_run_costs_only_itself(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A run the server refuses, among good ones, is reported and left for the per-run
    path (which reports it again); the good runs of its batch are imported."""
    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    make_runs(root, 3)
    bad = _bad_run(root)
    server = _server(data)
    try:
        with caplog.at_level(logging.WARNING, logger="wisp"):
            imp = _import(server, root, data)
        assert imp.imported == 3 and imp.batched == 3 and imp.errors >= 1
        assert any(str(bad) in r.getMessage() for r in caplog.records)
        assert sorted(r["name"] for r in _runs(server)) == ["r0", "r1", "r2"]
        assert not (bad / CURSOR_FILE).exists() or not Cursor.read(str(bad)).done
    finally:
        server.stop()


def _runs(server: _LocalServer) -> list[dict[str, Any]]:
    import sqlalchemy as sa

    with server._store.engine.connect() as c:
        return [dict(r._mapping) for r in c.execute(sa.text("SELECT name FROM runs"))]
