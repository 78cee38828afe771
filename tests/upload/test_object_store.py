"""Media in an S3-compatible object store: a real server on SQLite and PostgreSQL with
``--media-url s3://...``, the bytes moving between clients and the store directly."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

import wisp

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


@pytest.fixture(params=["sqlite", "postgresql"])
def s3_wisp(request: pytest.FixtureRequest, tmp_path: Path, s3_url: str) -> Iterator[Any]:
    """A real wisp server whose media go to a fresh bucket, on each database."""
    import psycopg

    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if request.param == "postgresql":
            try:
                db = stack.enter_context(temporary_postgres_database(PG_HOST))
            except psycopg.OperationalError as e:
                pytest.fail(f"PostgreSQL at {PG_HOST} is required: {e}")
        srv = stack.enter_context(Server(tmp_path / "srv", db=db, media_url=s3_url))
        srv.s3_url = s3_url
        yield srv


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One GET, redirects not followed."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        conn.request(
            "GET", parts.path + ("?" + parts.query if parts.query else ""), headers=headers
        )
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _objects(s3_server: Any, url: str) -> set[str]:
    bucket = urlsplit(url).netloc
    got = s3_server.client().list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"].rpartition("/")[2] for o in got}


def test_media_live_in_the_bucket_and_load_by_redirect(
    s3_wisp: Any, s3_server: Any, tmp_path: Path
) -> None:
    """Synced media land in the bucket (not on the server's disk); reads are checked, then
    answered by a short-lived presigned redirect carrying the safe content type, except
    HTML (served sandboxed by the server) and the dashboard's fetch() calls."""
    run = wisp.init(project="s3", dir=str(tmp_path / "runs"), mode="offline")
    img = np.random.default_rng(0).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    wisp.log({"img": wisp.Image(img), "h": wisp.Html("<script>alert(1)</script>")}, step=1)
    run.finish()
    (res,) = wisp.sync([run.dir], server_url=s3_wisp.url, api_key=s3_wisp.key)
    assert res.media == 2
    row = next(wisp.open_run(run.dir).history())
    shas = {
        k: hashlib.sha256((Path(run.dir) / row[k]["path"]).read_bytes()).hexdigest()
        for k in ("img", "h")
    }
    assert set(shas.values()) <= _objects(s3_server, s3_wisp.s3_url)
    assert not (tmp_path / "srv" / "server-media").exists()

    key = {"Authorization": f"Bearer {s3_wisp.key}"}
    base = f"{s3_wisp.url}/api/v1/media/"
    assert _get(base + shas["img"] + ".png", {})[0] == 401  # no redirect before the check
    status, headers, _ = _get(base + shas["img"] + ".png", key)
    assert status == 307 and headers["location"].startswith(s3_server.endpoint)
    assert "no-store" in headers["cache-control"]
    status, headers, body = _get(headers["location"], {})
    assert status == 200 and headers["content-type"] == "image/png"
    assert headers["content-disposition"] == "inline"
    assert hashlib.sha256(body).hexdigest() == shas["img"]

    status, headers, body = _get(base + shas["h"] + ".html", key)
    assert status == 200 and b"alert" in body and "sandbox" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    status, headers, body = _get(base + shas["img"] + ".png", {**key, "Sec-Fetch-Mode": "cors"})
    assert status == 200 and hashlib.sha256(body).hexdigest() == shas["img"]
    status, headers, _ = _get(base + shas["img"] + ".svg", key)  # a suffix cannot make it inline
    assert status == 307 and "attachment" in _get(headers["location"], {})[1]["content-disposition"]


def test_live_run_uploads_direct_and_gc_frees_the_bucket(
    s3_wisp: Any, s3_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An online run's media go straight to the bucket; once its run is deleted,
    ``wisp server gc`` frees their rows and their objects."""
    monkeypatch.setenv("WISP_SERVER_URL", s3_wisp.url)
    monkeypatch.setenv("WISP_API_KEY", s3_wisp.key)
    run = wisp.init(project="s3", mode="online")
    for step in range(3):
        px = np.full((8, 8), step * 40, dtype=np.uint8)
        wisp.log({"img": wisp.Image(px)}, step=step)
    run_id = run.id
    run.finish()
    media = s3_wisp.get(f"/runs/{run_id}/media")["media"]
    shas = {m["sha256"] for m in media}
    assert len(shas) == 3 and shas <= _objects(s3_server, s3_wisp.s3_url)

    from wisp.server import media_gc

    assert media_gc(db=s3_wisp.db_url, media_dir=s3_wisp.s3_url, older_than_days=0)[0] == 0
    req = http.client.HTTPConnection("127.0.0.1", s3_wisp.port, timeout=30)
    req.request(
        "DELETE", f"/api/v1/runs/{run_id}", headers={"Authorization": f"Bearer {s3_wisp.key}"}
    )
    assert req.getresponse().status in (200, 204)
    req.close()
    n, size = media_gc(db=s3_wisp.db_url, media_dir=s3_wisp.s3_url, older_than_days=0)
    assert n == 3 and size > 0
    assert not shas & _objects(s3_server, s3_wisp.s3_url)


def test_plan_refuses_over_quota_and_wrong_bytes(s3_wisp: Any) -> None:
    """A planned upload is checked like a PUT: the size limit, and bytes that do not hash
    to the name are refused on completion and leave nothing behind."""
    key = {"Authorization": f"Bearer {s3_wisp.key}", "Content-Type": "application/json"}

    def post(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", s3_wisp.port, timeout=30)
        conn.request("POST", "/api/v1" + path, json.dumps(body), headers=key)
        resp = conn.getresponse()
        out = resp.status, json.loads(resp.read())
        conn.close()
        return out

    sha = hashlib.sha256(b"right").hexdigest()
    status, doc = post(f"/uploads/{sha}", {"kind": "media", "size": 1 << 40})
    assert status == 413 and doc["error"]["field"] == "size"
    status, doc = post(f"/uploads/{sha}", {"kind": "nope", "size": 1})
    assert status == 422 and doc["error"]["field"] == "kind"
    status, plan = post(f"/uploads/{sha}", {"kind": "media", "size": 5, "suffix": ".txt"})
    assert status == 200 and plan["method"] == "presigned" and len(plan["parts"]) == 1
    part = plan["parts"][0]
    u = urlsplit(part["url"])
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=30)
    conn.request(
        "PUT", f"{u.path}?{u.query}", b"wrong", {"Content-Type": "application/octet-stream"}
    )
    assert conn.getresponse().status == 200
    conn.close()
    done = {"kind": "media", "size": 5, "suffix": ".txt", "upload_id": plan["upload_id"]}
    status, doc = post(f"/uploads/{sha}/complete", done)
    assert status == 422 and doc["error"]["code"] == "hash_mismatch"
    assert (
        _get(f"{s3_wisp.url}/api/v1/media/{sha}", {"Authorization": key["Authorization"]})[0] == 404
    )
    empty = hashlib.sha256(b"").hexdigest()
    assert post(f"/uploads/{empty}", {"kind": "media", "size": 0})[1]["method"] == "stored"
