"""`wisp server` as real processes: startup, keys commands, and two servers on one PostgreSQL."""

from __future__ import annotations

import concurrent.futures
import json
import os
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
