"""`wisp server` as real processes: startup, keys commands, and two servers on one PostgreSQL."""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import wisp.server
from wisp.errors import UsageError
from wisp.server import keys_create, keys_list, keys_revoke, serve


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(db: str, media: Path, port: int) -> subprocess.Popen[bytes]:
    code = (
        "import sys; from wisp.server import serve; "
        f"serve(db={db!r}, media_dir={str(media)!r}, port={port}, log_level='warning')"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited during startup"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/openapi.json", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail("server did not start within 30 s")


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
    ports = [_port(), _port()]
    procs = [_start(pg_url, tmp_path / "media", p) for p in ports]
    try:
        for port, proc in zip(ports, procs, strict=True):
            _wait(port, proc)
        hdr = {"Authorization": f"Bearer {key}"}
        urls = [f"http://127.0.0.1:{p}" for p in ports]
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
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=20)


def test_sqlite_server_process_serves(tmp_path: Path) -> None:
    """A real `serve()` process on SQLite answers, requires keys and serves the dashboard page."""
    db = f"sqlite:///{tmp_path / 'w.db'}"
    _, key = keys_create("write", db=db)
    port = _port()
    proc = _start(db, tmp_path / "media", port)
    try:
        _wait(port, proc)
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/api/v1/projects", timeout=5).status_code == 401
        r = httpx.get(f"{base}/api/v1/projects", headers={"Authorization": f"Bearer {key}"})
        assert r.json() == {"projects": []}
        page = httpx.get(f"{base}/", timeout=5).text
        # `make test` builds the dashboard first; a bare checkout serves the "not built" note
        built = (Path(wisp.server.__file__).parent / "static" / "index.html").exists()
        assert ('<main id="app"' in page) if built else ("not built" in page)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert os.path.exists(tmp_path / "w.db")
