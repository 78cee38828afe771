"""`wisp server` as real processes: startup, keys commands, and two servers on one PostgreSQL."""

from __future__ import annotations

import concurrent.futures
import json
import os
import time
from pathlib import Path

import httpx
import pytest

import wisp.server
from wisp.errors import UsageError
from wisp.server import keys_create, keys_list, keys_revoke, serve
from wisp.testing import Server


def test_no_auth_refused_on_public_host() -> None:
    """--no-auth on a non-loopback address is refused before anything starts."""
    with pytest.raises(UsageError, match="loopback"):
        serve(db="sqlite:///unused.db", host="0.0.0.0", no_auth=True)


def test_keys_commands(db_url: str) -> None:
    """keys create shows the secret once, list never shows it, revoke disables it."""
    kid, secret = keys_create("admin", "ci", db=db_url)
    listed = keys_list(db=db_url)
    assert [k["id"] for k in listed] == [kid] and secret not in json.dumps(listed)
    assert keys_revoke(kid, db=db_url) is True and keys_revoke(kid, db=db_url) is False
    with pytest.raises(UsageError):
        keys_create("root", db=db_url)


def test_two_servers_ingest_concurrently(pg_url: str, tmp_path: Path) -> None:
    """Two servers on one PostgreSQL, with interleaved retries, lose and duplicate nothing."""
    from wisp.server import open_store

    store = open_store(pg_url)
    _, key = store.create_key("write")
    store.close()
    servers = [Server(tmp_path / name, db=pg_url, key=key) for name in ("a", "b")]
    with servers[0], servers[1]:
        hdr = {"Authorization": f"Bearer {key}"}
        urls = [srv.url for srv in servers]
        httpx.put(f"{urls[0]}/api/v1/runs/duo", json={"project": "scale"}, headers=hdr, timeout=10)

        def writer(wid: str, offset: int) -> int:
            with httpx.Client(timeout=30, headers=hdr) as c:
                for seq in range(40):
                    rows = [[offset + seq * 50 + i, 1.0, {"v": float(seq)}] for i in range(50)]
                    body = {
                        "writer_id": wid,
                        "first_seq": seq,
                        "records": [{"type": 3, "data": {"rows": rows}}],
                    }
                    for url in (urls[seq % 2], urls[(seq + 1) % 2]):  # send, then retry elsewhere
                        r = c.post(f"{url}/api/v1/runs/duo/records", json=body)
                        assert r.status_code == 200 and r.json()["acked_seq"] == seq
            return 0

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futs = [pool.submit(writer, f"w{i}", i * 100_000) for i in range(4)]
            for f in futs:
                f.result(timeout=120)
        got = httpx.get(
            f"{urls[1]}/api/v1/series",
            params={"runs": "duo", "keys": "v", "buckets": 100_000},
            headers=hdr,
            timeout=30,
        ).json()["series"][0]
        assert got["count"] == 4 * 40 * 50 and len(set(got["x"])) == got["count"]


def test_sqlite_server_process_serves(tmp_path: Path) -> None:
    """A real `serve()` process on SQLite answers, requires keys and serves the dashboard page."""
    db = f"sqlite:///{tmp_path / 'w.db'}"
    with Server(tmp_path, db=db) as srv:
        base, key = srv.url, srv.key
        assert httpx.get(f"{base}/api/v1/projects", timeout=5).status_code == 401
        r = httpx.get(f"{base}/api/v1/projects", headers={"Authorization": f"Bearer {key}"})
        assert r.json() == {"projects": []}
        page = httpx.get(f"{base}/", timeout=5).text
        # `make test` builds the dashboard first; a bare checkout serves the "not built" note
        built = (Path(wisp.server.__file__).parent / "static" / "index.html").exists()
        assert ('<main id="app"' in page) if built else ("not built" in page)
    assert os.path.exists(tmp_path / "w.db")


def _worker_pids(log: Path) -> set[int]:
    import re

    return {int(m) for m in re.findall(r"Started server process \[(\d+)\]", log.read_text())}


def test_workers_serve_ingest_and_reads(db_url: str, tmp_path: Path) -> None:
    """`wisp server --workers 2` starts two worker processes that take SDK uploads and reads."""
    import wisp

    with Server(tmp_path / "srv", db=db_url, args=["--workers", "2"]) as srv:
        deadline = time.monotonic() + 30
        while len(_worker_pids(srv.log)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = _worker_pids(srv.log)
        assert len(pids) == 2 and all(os.path.exists(f"/proc/{p}") for p in pids)
        settings = {"server_url": srv.url, "api_key": srv.key, "system_metrics": False}
        ids = []
        for i in range(3):
            run = wisp.init(
                project="workers", config={"i": i}, dir=str(tmp_path), settings=settings
            )
            for step in range(500):
                run.log({"loss": 1.0 / (step + 1), "i": float(i)}, step=step)
            run.finish()
            ids.append(run.id)
        hdr = {"Authorization": f"Bearer {srv.key}"}

        def read(_: int) -> int:  # a fresh connection each: the kernel spreads them over both
            r = httpx.get(f"{srv.url}/api/v1/projects/workers/runs", headers=hdr, timeout=30)
            return len(r.json()["runs"]) if r.status_code == 200 else -r.status_code

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert list(pool.map(read, range(40))) == [3] * 40
        with wisp.Api(server_url=srv.url, api_key=srv.key) as api:
            got = {
                r.id: (r.config["i"], [row["loss"] for row in r.scan_history(keys=["loss"])])
                for r in api.runs("workers")
            }
        want = [1.0 / (s + 1) for s in range(500)]
        assert got == {rid: (i, want) for i, rid in enumerate(ids)}
        assert _worker_pids(srv.log) == pids  # no worker died and was replaced


def test_start_lines_are_log_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Serving without TLS on a non-loopback address is a WARNING of the start-up logger
    (``wisp server`` shows it), not a print; negative limits are refused by their flag."""
    import logging

    from wisp.server.serving import START_LOG

    class Stop(Exception):
        pass

    def stop(url: str) -> None:
        raise Stop(url)

    monkeypatch.setattr("wisp.server.blobs.open_blob_store", stop)
    with caplog.at_level(logging.INFO, logger=START_LOG), pytest.raises(Stop):
        serve(db=f"sqlite:///{tmp_path / 'w.db'}", media_dir=str(tmp_path), host="0.0.0.0", port=0)
    (rec,) = [r for r in caplog.records if r.name == START_LOG]
    assert rec.levelno == logging.WARNING and "0.0.0.0:0 without TLS" in rec.getMessage()
    for flag, kw in (
        ("max-client-connections", "max_client_connections"),
        ("ingest-concurrency", "ingest_concurrency"),
        ("ingest-processes", "ingest_processes"),
    ):
        with pytest.raises(UsageError, match=f"--{flag} must be >= 0, got -1"):
            serve(db="sqlite:///unused.db", **{kw: -1})
