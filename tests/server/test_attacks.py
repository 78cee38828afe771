"""Attacks on a shared server from an ordinary user, as real server processes on SQLite and
PostgreSQL (issue 41): knowing a sha256 or a name is never a right, a sweep made before its
project is its project's, sign-in limits cannot be turned against others, one client cannot
starve the others, and malformed requests get 4xx."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import blob_namings

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
PASSWORD = "correct horse battery"

pytestmark = pytest.mark.timeout(300)


class Team:
    """A started server with u1 (owner of private projects), u2 (an ordinary write key, no right
    on u1's projects) and anonymous callers."""

    def __init__(self, srv: Any) -> None:
        from wisp.server import keys_create
        from wisp.server.manage import users_add

        self.srv = srv
        self.port = srv.port
        for name in ("u1", "u2"):
            users_add(name, PASSWORD, db=srv.db_url)
        self.keys = {n: keys_create("write", n, db=srv.db_url, user=n)[1] for n in ("u1", "u2")}
        self.keys["admin"] = keys_create("admin", "site admin", db=srv.db_url)[1]

    def audit(self) -> list[dict[str, Any]]:
        status, got = self.call("GET", "/api/v1/audit?limit=1000", "admin")
        assert status == 200, got
        return list(got["audit"])

    def call(
        self,
        method: str,
        path: str,
        who: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        source: str = "127.0.0.1",
    ) -> tuple[int, Any]:
        """One request (JSON body unless bytes); (status, parsed JSON or raw bytes)."""
        h = dict(headers or {})
        if who is not None:
            h["Authorization"] = f"Bearer {self.keys[who]}"
        data = body
        if body is not None and not isinstance(body, bytes):
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=30, source_address=(source, 0)
        )
        try:
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw

    def log_run(self, who: str, run_id: str, project: str, values: dict[str, Any]) -> None:
        batch = {
            "writer_id": f"w-{run_id}",
            "first_seq": 0,
            "records": [
                {"type": 1, "data": {"project": project, "name": run_id}},
                {"type": 3, "data": {"rows": [[0, 1.0, values]]}},
            ],
        }
        status, got = self.call("POST", f"/api/v1/runs/{run_id}/records", who, batch)
        assert status == 200, got


@contextlib.contextmanager
def _team(
    backend: str, base: Path, args: tuple[str, ...] = (), media_url: str | None = None
) -> Iterator[Team]:
    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if backend == "postgresql":
            db = stack.enter_context(temporary_postgres_database(PG_HOST))
        yield Team(stack.enter_context(Server(base, db=db, args=args, media_url=media_url)))


@pytest.fixture(params=["sqlite", "postgresql"])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    """u1, u2 and anonymous callers on a server that trusts no proxy."""
    with _team(request.param, tmp_path / "srv") as t:
        yield t


@pytest.fixture(params=["sqlite", "postgresql"])
def proxied(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    """The same behind a reverse proxy on 127.0.0.1 (``--trusted-proxy 127.0.0.1``)."""
    with _team(request.param, tmp_path / "srv", ("--trusted-proxy", "127.0.0.1")) as t:
        yield t


def _blob(tag: str) -> tuple[bytes, str]:
    data = b"\x89PNG\r\n\x1a\n" + tag.encode() * 50
    return data, hashlib.sha256(data).hexdigest()


# -- bytes by hash ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["media", "artifact"])
def test_complete_without_bytes_grants_nothing(team: Team, kind: str) -> None:
    """`complete` on a blob the server holds, with no bytes sent, is refused and gives u2 no
    right: u1's private bytes stay unreadable, and u2 cannot name them in a version of its own."""
    data, sha = _blob(f"private-{kind}")
    if kind == "media":
        assert team.call("PUT", f"/api/v1/media/{sha}.png", "u1", data)[0] == 201
        team.log_run("u1", "r1", "u1/secret", {"img": {"_type": "image", "sha256": sha}})
        read = f"/api/v1/media/{sha}"
    else:
        assert team.call("PUT", f"/api/v1/artifact-files/{sha}", "u1", data)[0] == 201
        manifest = {
            "version": 1,
            "type": "dataset",
            "entries": {"a.png": {"digest": sha, "size": len(data)}},
        }
        body = {"type": "dataset", "manifest": manifest}
        assert (
            team.call(
                "POST", "/api/v1/entities/u1/projects/secret/artifacts/ds/versions", "u1", body
            )[0]
            == 201
        )
        read = f"/api/v1/artifact-files/{sha}"
    done = {"kind": kind, "size": len(data), "upload_id": "x"}
    status, got = team.call("POST", f"/api/v1/uploads/{sha}/complete", "u2", done)
    assert status == 409, (status, got)
    assert team.call("GET", read, "u2")[0] in (403, 404)
    manifest = {
        "version": 1,
        "type": "dataset",
        "entries": {"b.png": {"digest": sha, "size": len(data)}},
    }
    status, got = team.call(
        "POST",
        "/api/v1/entities/u2/projects/mine/artifacts/stolen/versions",
        "u2",
        {"type": "dataset", "manifest": manifest},
    )
    assert status == 409 and got["error"]["code"] == "missing_files", got
    # sending the bytes is the proof: then the blob is u2's to read and to name
    assert team.call("PUT", read, "u2", data)[0] in (200, 201)
    assert team.call("GET", read, "u2")[0] == 200


def test_naming_a_sha_in_your_own_run_grants_nothing(team: Team) -> None:
    """u2 naming u1's private sha256 in its own runs (every media type, tables, galleries, a
    public-read project) reads nothing, nor does anyone reading u2's project; once u2 sends
    the bytes, its run's readers may read them."""
    data, sha = _blob("u1-private")
    assert team.call("PUT", f"/api/v1/media/{sha}.png", "u1", data)[0] == 201
    team.log_run("u1", "r1", "u1/secret", {"img": {"_type": "image", "sha256": sha}})
    for i, value in enumerate(blob_namings(sha)):
        team.log_run("u2", f"steal{i}", "u2/pub", {"v": value})
    status, _ = team.call(
        "PUT", "/api/v1/entities/u2/projects/pub", "u2", {"visibility": "public-read"}
    )
    assert status == 200
    for method in ("GET", "HEAD"):
        assert team.call(method, f"/api/v1/media/{sha}", "u2")[0] in (403, 404)
        assert team.call(method, f"/api/v1/media/{sha}", None)[0] in (401, 403, 404)
    assert team.call("PUT", f"/api/v1/media/{sha}.png", "u2", data)[0] == 200  # proves it
    assert team.call("GET", f"/api/v1/media/{sha}", "u2")[0] == 200
    assert team.call("GET", f"/api/v1/media/{sha}", None)[0] == 200  # u2's public run names it


# -- sweeps before their project ------------------------------------------------------------------


def test_sweep_before_its_project_is_the_projects(team: Team) -> None:
    """A sweep u1 makes in a project that has no run yet is private to u1 from the first
    moment: anonymous callers and u2 neither read it, add trials, nor cancel it; u2 cannot
    make a sweep under u1's name."""
    grid = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1, 2]}}}
    sweep = {"id": "sw-early", "config": grid, "created_at": 1.0}
    fresh = "/api/v1/entities/u1/projects/fresh/sweeps"
    assert team.call("POST", fresh, "u1", sweep)[0] == 201
    base = f"{fresh}/sw-early"
    assert team.call("GET", base, None)[0] == 401
    assert team.call("GET", base, "u2")[0] in (403, 404)
    assert team.call("GET", base + "/trials", "u2")[0] in (403, 404)
    listed = team.call("GET", "/api/v1/sweeps", "u2")[1]["sweeps"]
    assert [s for s in listed if s["id"] == "sw-early"] == []
    assert team.call("GET", "/api/v1/sweeps?id=sw-early", None)[1]["sweeps"] == []
    trial = {
        "number": 0,
        "run_id": "x",
        "internal": {},
        "params": {},
        "state": "complete",
        "created_at": 2.0,
        "value": -1e9,
    }
    assert team.call("POST", base + "/trials", "u2", trial)[0] in (403, 404)
    assert team.call("PATCH", base, "u2", {"state": "cancelled"})[0] in (403, 404)
    assert team.call("GET", base, "u1")[1]["state"] == "running"
    squat = "/api/v1/entities/u1/projects/other/sweeps"
    assert team.call("POST", squat, "u2", {**sweep, "id": "sw-squat"})[0] == 403


def test_a_sweep_id_cannot_be_taken_from_another_project(team: Team) -> None:
    """u2 making sweep ``sw-next`` in u2's own project first does not stop u1 making
    ``sw-next`` in u1's (ids are unique per project); each reads its own, not the other's."""
    grid = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1]}}}
    sweep = {"id": "sw-next", "config": grid, "created_at": 1.0}
    theirs, mine = "/api/v1/entities/u2/projects/p/sweeps", "/api/v1/entities/u1/projects/p/sweeps"
    assert team.call("POST", theirs, "u2", {**sweep, "name": "squatter"})[0] == 201
    assert team.call("POST", mine, "u1", {**sweep, "name": "mine"})[0] == 201
    assert team.call("GET", f"{mine}/sw-next", "u1")[1]["name"] == "mine"
    assert team.call("GET", f"{theirs}/sw-next", "u2")[1]["name"] == "squatter"
    assert team.call("GET", f"{mine}/sw-next", "u2")[0] in (403, 404)


# -- sign-in --------------------------------------------------------------------------------------


def _login(
    team: Team, name: str, password: str, source: str = "127.0.0.1", xff: str | None = None
) -> int:
    h = {"Origin": f"http://127.0.0.1:{team.port}"}
    if xff:
        h["X-Forwarded-For"] = xff
    return team.call(
        "POST", "/api/v1/auth/login", None, {"name": name, "password": password}, h, source=source
    )[0]


def test_forwarded_for_is_ignored_without_a_trusted_proxy(team: Team) -> None:
    """Rotating X-Forwarded-For from a peer that is not a trusted proxy buys no more sign-in
    attempts (429 within the per-address budget), and the audit log records the real address
    for every attempt, the refused ones (429) included."""
    t0 = time.monotonic()
    got = [_login(team, f"nobody{i}", "wrong", xff=f"10.9.0.{i}") for i in range(60)]
    refilled = (time.monotonic() - t0) * 50 / 600  # the address's bucket: 50 per 10 minutes
    assert 50 <= got.count(401) <= 51 + refilled and got[-1] == 429, got
    rows = [a for a in team.audit() if a["action"].startswith("auth.login")]
    assert len(rows) == 60
    assert {a["addr"] for a in rows} == {"127.0.0.1"}
    assert sorted({a["status"] for a in rows}) == [401, 429]


def test_sign_in_limits_behind_a_trusted_proxy(proxied: Team) -> None:
    """Behind a trusted proxy each client's address counts on its own: an attacker guessing u1's
    password is slowed and refused, u1 (and everyone else behind the proxy) still signs in, and
    the audit log names the forwarded address."""
    got = [_login(proxied, "u1", "wrong", xff="10.0.0.66") for _ in range(15)]
    assert 429 in got
    assert _login(proxied, "u1", PASSWORD, xff="10.0.0.7") == 200
    assert _login(proxied, "u2", PASSWORD, xff="10.0.0.8") == 200
    addrs = {a["addr"] for a in proxied.audit() if a["action"] == "auth.login_failed"}
    assert addrs == {"10.0.0.66"}


def test_one_user_cannot_lock_another_out(team: Team) -> None:
    """Twenty wrong passwords for u1 from an attacker's address leave u1 signing in from its own
    address: the per-user limit counts per user and address."""
    for _ in range(20):
        _login(team, "u1", "wrong", source="127.0.0.2")
    assert _login(team, "u1", PASSWORD, source="127.0.0.3") == 200


# -- connections and malformed requests -------------------------------------------------------------


def test_one_client_cannot_starve_the_others(team: Team) -> None:
    """A client holding 1,000 sockets (no request sent) does not stop another client's reads:
    each answers within 1 s."""
    held = []
    try:
        for _ in range(1000):
            s = socket.socket()
            s.setblocking(False)
            s.bind(("127.0.0.2", 0))
            with contextlib.suppress(BlockingIOError):
                s.connect(("127.0.0.1", team.port))
            held.append(s)
        time.sleep(0.5)
        for _ in range(20):
            t0 = time.monotonic()
            status, _ = team.call("GET", "/api/v1/projects", "u1", source="127.0.0.3")
            assert status == 200
            assert time.monotonic() - t0 < 1.0
    finally:
        for s in held:
            s.close()


def _raw(team: Team, data: bytes, read: bool = True) -> bytes:
    with socket.create_connection(("127.0.0.1", team.port), timeout=10) as s:
        s.sendall(data)
        return s.recv(65536) if read else b""


def test_headers_are_limited_as_documented(team: Team) -> None:
    """A 70 KiB header or 10,000 headers get 431, not an answer."""
    big = b"GET /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: " + b"a" * 70_000 + b"\r\n\r\n"
    assert _raw(team, big).startswith(b"HTTP/1.1 431")
    many = (
        b"GET /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-B: b\r\n" * 10_000 + b"\r\n"
    )
    assert _raw(team, many).startswith(b"HTTP/1.1 431")


def test_content_length_over_the_limit_is_refused_before_reading(team: Team) -> None:
    """A declared body over the route's limit (a 1 GiB batch, a 2 TiB artifact file) gets 413
    at once, before a byte of it is sent."""
    for target, size in (
        ("POST /api/v1/runs/r9/records", 1 << 30),
        (f"PUT /api/v1/artifact-files/{'a' * 64}", 1 << 41),
    ):
        head = (
            f"{target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {team.keys['u1']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n"
        ).encode()
        t0 = time.monotonic()
        assert _raw(team, head).startswith(b"HTTP/1.1 413"), target
        assert time.monotonic() - t0 < 5


def test_malformed_paths_are_4xx(team: Team) -> None:
    """NUL and undecodable bytes in a path are a 400, never a 500 with a traceback; an
    encoded '../' serves nothing outside the dashboard."""
    for path in ("/index.html%00.png", "/api/v1/runs/a%00b", "/%ff%fe", "/assets/%00"):
        status, _ = team.call("GET", path, "u1")
        assert status == 400, (path, status)
    status, body = team.call("GET", "/static/..%2f..%2f..%2fetc%2fpasswd", "u1")
    assert status < 500 and b"root:" not in (body if isinstance(body, bytes) else b"")


def test_login_csrf_needs_the_same_origin(team: Team) -> None:
    """A text/plain sign-in without Origin (a cross-site form) is refused; so is a foreign
    Origin or Sec-Fetch-Site: cross-site."""
    body = json.dumps({"name": "u1", "password": PASSWORD}).encode()
    assert team.call("POST", "/api/v1/auth/login", None, body, {"Content-Type": "text/plain"})[
        0
    ] in (403, 415)
    h = {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}
    assert team.call("POST", "/api/v1/auth/login", None, body, h)[0] == 403
    h = {"Content-Type": "application/json", "Origin": "http://evil.example"}
    assert team.call("POST", "/api/v1/auth/login", None, body, h)[0] == 403
    assert _login(team, "u1", PASSWORD) == 200


def test_keys_in_query_strings_are_never_logged(team: Team) -> None:
    """A key put in a URL query string does not reach the server's log."""
    key = team.keys["u1"]
    team.call("GET", f"/api/v1/projects?api_key={key}&token={key}")
    time.sleep(0.3)
    assert key not in team.srv.log.read_text(errors="replace")


@pytest.mark.parametrize("kind", ["media", "artifact"])
def test_complete_without_bytes_grants_nothing_on_an_object_store(
    tmp_path: Path, s3_url: str, kind: str
) -> None:
    """With S3 (presigned uploads) too: a `complete` naming an upload that never carried the
    bytes, for a blob held as either kind, is refused and grants no read (GET, HEAD, or the
    presigned redirect)."""
    with _team("sqlite", tmp_path / "srv", media_url=s3_url) as team:
        data, sha = _blob(f"s3-private-{kind}")
        assert team.call("PUT", f"/api/v1/media/{sha}.png", "u1", data)[0] == 201
        team.log_run("u1", "r1", "u1/secret", {"img": {"_type": "image", "sha256": sha}})
        done = {"kind": kind, "size": len(data), "upload_id": "x"}
        status, got = team.call("POST", f"/api/v1/uploads/{sha}/complete", "u2", done)
        assert status == 409 and got["error"]["code"] == "upload_not_proven", (status, got)
        for method in ("GET", "HEAD"):
            assert team.call(method, f"/api/v1/media/{sha}", "u2")[0] in (403, 404)
        plan = {"kind": kind, "size": len(data)}
        status, got = team.call("POST", f"/api/v1/uploads/{sha}", "u2", plan)
        assert status == 200 and got["method"] == "direct", got  # send the bytes instead
        assert team.call("GET", f"/api/v1/media/{sha}", "u1")[0] in (200, 302, 307)
