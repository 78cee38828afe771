"""`wisp ui` importing local runs: the stat index (a warm start reads only new or grown runs),
the in-process transport, and importing in time-bounded slices."""

from __future__ import annotations

import io
import json
import os
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp._runfile import RecordType, encode_record

pytest.importorskip("uvicorn")

from wisp._ui import LocalImporter, _free_port, _LocalServer, ui
from wisp._ui_local import InProcessTransport, StatIndex
from wisp._upload._transport import ApiClient

SETTINGS = {"system_metrics": False, "console": "off", "git": False}


def make_runs(root: Path, n: int, first: int = 0) -> None:
    for i in range(first, first + n):
        run = wisp.init(project="p", name=f"r{i}", dir=str(root), settings=SETTINGS)
        for s in range(20):
            wisp.log({"loss": 1.0 / (s + 1), "acc": s / 20}, step=s)
        run.finish()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def _server(data: Path) -> _LocalServer:
    return _LocalServer(
        f"sqlite:///{data / 'wisp.db'}", str(data / "media"), "127.0.0.1", _free_port("127.0.0.1")
    )


def _importer(server: _LocalServer, root: Path, data: Path) -> tuple[LocalImporter, Any]:
    transport = InProcessTransport(server.app, server.url)
    index = StatIndex(str(data / "ui-index.json"))
    imp = LocalImporter(
        [str(root)],
        lambda: ApiClient(server.url, server.write_key, transport=transport),
        index=index,
    )
    return imp, transport


def test_warm_start_reads_only_new_and_grown_runs(tmp_path: Path) -> None:
    """After a complete import, a restart opens only the run that was added and the run whose
    file grew; the grown run's new record reaches the server; the others are not opened."""
    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    make_runs(root, 4)
    server = _server(data)
    try:
        imp, transport = _importer(server, root, data)
        imp.poll()
        assert imp.opened == 4 and imp.imported == 4 and imp.pending == 0
        imp.close()
        transport.shutdown()
        runs = _get(f"{server.url}/api/v1/projects/p/runs")["runs"]
        assert len(runs) == 4

        grown = sorted((root / "wisp").iterdir())[0]  # chosen before the new run exists
        make_runs(root, 1, first=4)
        with open(grown / "run.wisp", "ab") as f:  # one more summary record, as a resume would
            f.write(encode_record(RecordType.SUMMARY, b'{"summary":{"late":7}}'))

        imp2, transport2 = _importer(server, root, data)
        imp2.poll()
        assert imp2.opened == 2 and imp2.imported == 2
        imp2.close()
        transport2.shutdown()
        runs = _get(f"{server.url}/api/v1/projects/p/runs")["runs"]
        assert len(runs) == 5
        grown_id = wisp.open_run(grown).id
        assert _get(f"{server.url}/api/v1/runs/{grown_id}")["summary"]["late"] == 7

        imp3, transport3 = _importer(server, root, data)
        imp3.poll()
        assert imp3.opened == 0
        transport3.shutdown()
    finally:
        server.stop()


def test_a_new_database_at_the_same_address_gets_every_run_again(tmp_path: Path) -> None:
    """A ui started on a new database (``wisp.db`` deleted) at the same address imports every
    run with its whole history again, although each run's cursor says that address has it."""
    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    make_runs(root, 3)
    port = _free_port("127.0.0.1")
    for attempt in range(2):
        server = _LocalServer(
            f"sqlite:///{data / 'wisp.db'}", str(data / "media"), "127.0.0.1", port
        )
        try:
            imp, transport = _importer(server, root, data)
            imp.poll()
            assert imp.imported == 3 and imp.pending == 0, attempt
            imp.close()
            transport.shutdown()
            runs = _get(f"{server.url}/api/v1/projects/p/runs")["runs"]
            ids = ",".join(r["key"] for r in runs)
            got = _get(f"{server.url}/api/v1/series?runs={ids}&keys=loss&x=step&buckets=1000")
            assert sorted(len(s["y"]) for s in got["series"]) == [20, 20, 20], attempt
        finally:
            server.stop()
        (data / "wisp.db").unlink()  # the user starts over; the run folders stay
        (data / "ui-index.json").unlink()  # the index belongs to the deleted database


def test_a_poll_stops_at_its_budget_and_the_next_goes_on(tmp_path: Path) -> None:
    """With a zero budget each poll imports at most one run and says it is busy; polling on
    imports them all."""
    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    make_runs(root, 3)
    server = _server(data)
    try:
        imp, transport = _importer(server, root, data)
        polls = 0
        while True:
            imp.poll(budget=0.0)
            polls += 1
            if not imp.busy:
                break
        assert imp.imported == 3 and polls >= 3
        transport.shutdown()
    finally:
        server.stop()


def test_ui_reports_progress_and_serves_while_importing(tmp_path: Path) -> None:
    """ui() calls ready() after its first slice of importing, prints a progress line that ends
    with "done", and a fresh data dir starts a fresh index."""
    root, data = tmp_path / "work", tmp_path / "data"
    make_runs(root, 3)
    stream = io.StringIO()
    stop = threading.Event()
    box: dict[str, str] = {}

    def ready(url: str) -> None:
        box["url"] = url

    t = threading.Thread(
        target=ui,
        kwargs={
            "port": _free_port("127.0.0.1"),
            "dir": str(root),
            "data": str(data),
            "poll_interval": 0.05,
            "stop": stop,
            "ready": ready,
            "progress": stream,
            "first_budget": 0.0,
        },
        daemon=True,
    )
    t.start()
    try:
        deadline = 60.0
        import time

        start = time.monotonic()
        while time.monotonic() - start < deadline:
            if "url" in box and "done" in stream.getvalue():
                break
            time.sleep(0.05)
        assert "done" in stream.getvalue(), stream.getvalue()
        assert len(_get(f"{box['url']}/api/v1/projects/p/runs")["runs"]) == 3
    finally:
        stop.set()
        t.join(30)
    index = json.loads((data / "ui-index.json").read_text())
    assert len(index["runs"]) == 3 and all(os.path.isdir(d) for d in index["runs"])


def test_a_run_that_never_finished_is_crashed_on_the_server(tmp_path: Path) -> None:
    """A run directory whose run.json says crashed (no finish record) is registered as crashed,
    and a finished one as finished."""
    from wisp.integrations.importers._writeback import ImportedRun

    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    make_runs(root, 1)
    cut = ImportedRun(
        str(root), run_id="cut1", project="p", name="cut", created_at=1.7e9, origin={}
    )
    cut.log(0, 1.7e9, {"loss": 1.0})
    cut.finish(1.7e9 + 1, None)
    server = _server(data)
    try:
        imp, transport = _importer(server, root, data)
        imp.poll()
        transport.shutdown()
        states = {
            r["name"]: r["state"] for r in _get(f"{server.url}/api/v1/projects/p/runs")["runs"]
        }
        assert states == {"cut": "crashed", "r0": "finished"}
    finally:
        server.stop()


def test_ready_by_default_after_every_run_is_imported(tmp_path: Path) -> None:
    """Without first_budget, ready(url) comes once every local run is on the server."""
    root, data = tmp_path / "work", tmp_path / "data"
    make_runs(root, 3)
    stop = threading.Event()
    seen: list[int] = []

    def ready(url: str) -> None:
        seen.append(len(_get(f"{url}/api/v1/projects/p/runs")["runs"]))
        stop.set()

    ui(port=_free_port("127.0.0.1"), dir=str(root), data=str(data), stop=stop, ready=ready)
    assert seen == [3]


def test_a_run_is_indexed_only_once_its_artifacts_are_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished offline run whose artifact could not be published stays out of the stat
    index, so the next start publishes it; after that a start opens nothing."""
    root, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("WISP_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "w.txt").write_text("weights")
    run = wisp.init(project="p", dir=str(root), mode="offline", settings=SETTINGS)
    run.log_artifact(str(tmp_path / "w.txt"), name="model", type="model")
    run.finish()
    server = _server(data)
    try:
        imp, transport = _importer(server, root, data)
        imp.artifacts = (f"http://127.0.0.1:{_free_port('127.0.0.1')}", server.write_key)
        imp.poll()  # the run imports; its artifact cannot reach that (closed) port
        assert imp.imported == 1 and len(imp.uploaders) == 1
        imp.close()
        transport.shutdown()

        imp2, transport2 = _importer(server, root, data)
        imp2.artifacts = (server.url, server.write_key)
        imp2.poll()
        assert imp2.opened == 1 and not imp2.uploaders
        imp2.close()
        transport2.shutdown()
        arts = _get(f"{server.url}/api/v1/projects/p/artifacts")["artifacts"]
        assert [a["name"] for a in arts] == ["model"]

        imp3, transport3 = _importer(server, root, data)
        imp3.artifacts = (server.url, server.write_key)
        imp3.poll()
        assert imp3.opened == 0
        transport3.shutdown()
    finally:
        server.stop()
