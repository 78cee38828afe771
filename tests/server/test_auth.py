"""Dashboard sign-in, CSRF, Host allow-list, media headers and the upgrade of old databases."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import history

PNG = b"\x89PNG\r\n\x1a\n" + b"x" * 20
HTML = b"<html><script>fetch('/api/v1/projects')</script></html>"


@pytest.fixture
def alice(store: Any) -> int:
    uid: int = store.users.add_user("alice", "correct horse")
    return uid


def _login(app: Any, password: str = "correct horse") -> TestClient:
    c = TestClient(app, base_url="http://testserver")
    r = c.post("/api/v1/auth/login", json={"name": "alice", "password": password})
    assert r.status_code == 200, r.text
    return c


def test_login_sets_a_strict_httponly_session(app: Any, alice: int) -> None:
    """Signing in sets an HttpOnly SameSite=Strict session cookie; /auth/me names the user."""
    c = TestClient(app)
    bad = c.post("/api/v1/auth/login", json={"name": "alice", "password": "wrong one"})
    assert bad.status_code == 401
    r = c.post("/api/v1/auth/login", json={"name": "alice", "password": "correct horse"})
    cookie = next(
        v for k, v in r.headers.multi_items() if k == "set-cookie" and "wisp_session" in v
    )
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" not in cookie
    me = c.get("/api/v1/auth/me").json()
    assert me["user"] == "alice" and me["via"] == "session" and me["csrf"] == r.json()["csrf"]


def test_nul_in_a_sign_in_name_is_a_plain_refusal(app: Any, alice: int) -> None:
    """A user name with NUL (which PostgreSQL cannot store) is a wrong sign-in (401), not a 500."""
    c = TestClient(app)
    r = c.post("/api/v1/auth/login", json={"name": "ali\u0000ce", "password": "x"})
    assert r.status_code == 401


def test_state_changes_need_the_csrf_token(app: Any, alice: int) -> None:
    """A session write without the X-CSRF-Token header, or from another origin, is refused."""
    c = _login(app)
    csrf = c.get("/api/v1/auth/me").json()["csrf"]
    body = {"project": "p"}
    assert c.put("/api/v1/runs/r1", json=body).status_code == 403
    assert c.put("/api/v1/runs/r1", json=body, headers={"X-CSRF-Token": "nope"}).status_code == 403
    evil = {"X-CSRF-Token": csrf, "Origin": "http://evil.example"}
    assert c.put("/api/v1/runs/r1", json=body, headers=evil).status_code == 403
    assert c.put("/api/v1/runs/r1", json=body, headers={"X-CSRF-Token": csrf}).status_code == 200
    assert c.get("/api/v1/runs/r1").status_code == 200  # reads need no token


def test_refusals_are_audited_with_who_and_where(app: Any, store: Any, alice: int) -> None:
    """A session write refused for its CSRF token is audited as its user, and a cross-site
    sign-in as a refused sign-in of the name it tried, each with the client's address."""
    c = _login(app)
    assert c.put("/api/v1/runs/r1", json={"project": "p"}).status_code == 403
    evil = {"Origin": "http://evil.example"}
    body = {"name": "alice", "password": "correct horse"}
    assert TestClient(app).post("/api/v1/auth/login", json=body, headers=evil).status_code == 403
    rows = store.access.audit_log(50)
    seen = {(r["actor"], r["action"], r["status"]) for r in rows}
    assert ("alice", "run.put", 403) in seen
    assert ("anonymous", "auth.login_refused", 403) in seen
    assert all(r["addr"] for r in rows)


def test_images_load_with_the_session_and_logout_ends_it(app: Any, alice: int) -> None:
    """An <img> request carries only the cookie: it loads; after logout it is refused."""
    c = _login(app)
    h = {"X-CSRF-Token": c.get("/api/v1/auth/me").json()["csrf"]}
    sha = hashlib.sha256(PNG).hexdigest()
    batch = {
        "writer_id": "w",
        "first_seq": 0,
        "records": [
            {"type": 1, "data": {"project": "p"}},
            history([(0, 1.0, {"img": {"_type": "image", "sha256": sha}})]),
        ],
    }
    assert c.post("/api/v1/runs/r1/records", json=batch, headers=h).status_code == 200
    assert c.put(f"/api/v1/media/{sha}.png", content=PNG, headers=h).status_code == 201
    got = c.get(f"/api/v1/media/{sha}.png")
    assert got.status_code == 200 and got.content == PNG
    assert c.post("/api/v1/auth/logout", headers=h).status_code == 200
    assert c.get(f"/api/v1/media/{sha}.png").status_code == 401


def test_media_that_is_not_an_image_is_an_attachment(api: Any) -> None:
    """SVG media is an attachment; HTML (shown in the dashboard's iframe) stays inline but
    sandboxed; both carry nosniff and a sandboxing CSP."""
    for data, suffix in ((HTML, ".html"), (b"<svg xmlns='http://www.w3.org/2000/svg'/>", ".svg")):
        sha = hashlib.sha256(data).hexdigest()
        assert api.put(f"/api/v1/media/{sha}{suffix}", content=data).status_code == 201
        r = api.get(f"/api/v1/media/{sha}{suffix}")
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in r.headers["content-security-policy"]
        want = None if suffix == ".html" else "attachment"
        assert r.headers.get("content-disposition") == want, suffix
    sha = hashlib.sha256(PNG).hexdigest()
    assert api.put(f"/api/v1/media/{sha}.png", content=PNG).status_code == 201
    r = api.get(f"/api/v1/media/{sha}.png")
    assert (
        r.headers["x-content-type-options"] == "nosniff" and "content-disposition" not in r.headers
    )
    head = api.head(f"/api/v1/media/{sha}.png")
    assert head.status_code == 200 and head.headers["content-type"] == "image/png"


def test_host_allow_list_refuses_rebinding(settings: Any, store: Any) -> None:
    """With an allow-list (loopback servers), a request naming another Host gets 421."""
    from wisp.server import create_app

    settings.allowed_hosts = ["127.0.0.1", "localhost"]
    settings.no_auth = True
    app = create_app(settings, store=store)
    assert (
        TestClient(app, base_url="http://127.0.0.1:8642").get("/api/v1/projects").status_code == 200
    )
    assert TestClient(app, base_url="http://localhost").get("/api/v1/projects").status_code == 200
    r = TestClient(app, base_url="http://evil.example:8642").get("/api/v1/projects")
    assert r.status_code == 421


def test_trusted_proxy_header_only_from_the_proxy(settings: Any, store: Any, alice: int) -> None:
    """The SSO user header is believed only from a configured proxy address."""
    from wisp.server import create_app

    settings.sso_header = "X-Forwarded-User"
    settings.trusted_proxies = ["10.0.0.0/8"]
    app = create_app(settings, store=store)
    store.access.set_project("p", ("user", alice), "private")
    store.put_run("r1", {"project": "p"})
    h = {"X-Forwarded-User": "alice"}
    assert TestClient(app).get("/api/v1/runs/r1", headers=h).status_code == 401  # testclient
    proxied = TestClient(app, client=("10.1.2.3", 5000))
    assert proxied.get("/api/v1/runs/r1", headers=h).status_code == 200
    assert proxied.get("/api/v1/auth/me", headers=h).json()["via"] == "sso"


def test_upgrade_gives_existing_keys_and_runs_to_an_admin(tmp_path: Path) -> None:
    """A version-1 database upgrades: its keys, runs and media belong to site admin 'admin'."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from wisp.server.store.db import make_engine
    from wisp.server.store.facade import open_store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    cfg = Config()
    cfg.set_main_option(
        "script_location",
        str(
            Path(__import__("wisp.server.store.db").server.store.db.__file__).with_name(
                "migrations"
            )
        ),
    )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001_initial")
        conn.execute(
            text(
                "INSERT INTO api_keys (id, key_hash, scope, name, created_at) "
                f"VALUES ('k1', '{hashlib.sha256(b'old-secret').hexdigest()}', 'read', 'old', 1.0)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO runs (id, project, name, state, tags, notes, config, summary, meta,"
                " created_at, last_seen) VALUES ('r1', 'p', 'r1', 'running', '[]', '', '{}',"
                " '{}', '{}', 1.0, 1.0)"
            )
        )
        sha = "ab" * 32
        conn.execute(text(f"INSERT INTO media_files VALUES ('{sha}', 3, '.png', 1.0)"))
        conn.execute(
            text(
                "INSERT INTO media_items (run_id, key, step, time, type, data) VALUES "
                f"""('r1', 'img', 0, 1.0, 'image', '{{"_type": "image", "sha256": "{sha}"}}')"""
            )
        )
    engine.dispose()
    store = open_store(url)
    try:
        assert store.keys.lookup("old-secret") is not None
        principal = store.users.principal(store.keys.lookup("old-secret")[1], "read", "key")
        assert principal.name == "admin" and principal.is_admin
        assert store.access.describe("p") == {
            "name": "p",
            "owner": "admin",
            "owner_kind": "user",
            "visibility": "private",
        }
        assert store.access.orphan_media(1e12) == []  # the old image is referenced by r1
        run = store.get_run("r1")
        assert run is not None and (run["id"], run["key"]) == ("r1", "r1")  # keys stay ids
    finally:
        store.close()


def test_upgrade_indexes_the_files_of_stored_artifact_versions(tmp_path: Path) -> None:
    """Upgrading to run keys (0003) indexes the blobs stored manifests name, so their bytes
    stay readable by the readers of their projects, and only by them."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from wisp.server.rights.matrix import Principal
    from wisp.server.store.db import make_engine
    from wisp.server.store.facade import open_store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    cfg = Config()
    cfg.set_main_option(
        "script_location",
        str(
            Path(__import__("wisp.server.store.db").server.store.db.__file__).with_name(
                "migrations"
            )
        ),
    )
    sha, ref = "cd" * 32, "ef" * 32
    manifest = (
        f'{{"version": 1, "entries": {{"a.bin": {{"digest": "{sha}", "size": 3}}, '
        f'"b.bin": {{"digest": "{ref}", "ref": "s3://b/k", "size": 1}}}}}}'
    )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0004_team")
        conn.execute(text("INSERT INTO artifacts VALUES (1, 'p', 'net', 'model', 1.0, 1.0)"))
        conn.execute(
            text(
                "INSERT INTO artifact_versions (id, artifact_id, version_index, digest, manifest,"
                " description, meta, size, file_count, run_id, created_at) VALUES"
                " (1, 1, 0, :d, :m, '', '{}', 3, 2, NULL, 1.0)"
            ),
            {"d": "00" * 32, "m": manifest},
        )
    engine.dispose()
    store = open_store(url)
    try:
        alice = store.users.add_user("alice")
        store.access.set_project("p", ("user", alice), "private")
        owner = store.users.principal(alice, "read", "key")
        bob = store.users.add_user("bob")
        other = store.users.principal(bob, "read", "key")
        assert isinstance(owner, Principal) and isinstance(other, Principal)
        assert store.access.readable_blobs(owner, [sha, ref]) == {sha}
        assert store.access.readable_blobs(other, [sha]) == set()
    finally:
        store.close()


def test_csv_export_neutralises_formulas_and_times_are_range_checked(api: Any) -> None:
    """A string cell or metric key starting with = + - @ is exported quoted; an absurd
    created_at is a 422."""
    batch = {
        "writer_id": "w",
        "first_seq": 0,
        "records": [
            {"type": 1, "data": {"project": "p"}},
            history([(0, 1.0, {"s": "=HYPERLINK(1)", "v": -1.5, "t": "@x", "=cmd|x": 2.0})]),
        ],
    }
    assert api.post("/api/v1/runs/r1/records", json=batch).status_code == 200
    csv_text = api.get("/api/v1/runs/r1/history?format=csv").text
    assert "'=HYPERLINK(1)" in csv_text and "'@x" in csv_text and ",-1.5\n" in csv_text
    assert csv_text.startswith("_step,_timestamp,'=cmd|x,s,t,v\n"), csv_text
    for bad in (1e300, -5.0):
        r = api.put("/api/v1/runs/r2", json={"project": "p", "created_at": bad})
        assert r.status_code == 422 and r.json()["error"]["field"] == "created_at"


def test_gc_deletes_only_unreferenced_media(tmp_path: Path) -> None:
    """`wisp server gc` removes media no run refers to, keeps referenced and recent ones."""
    import time

    from wisp.server import media_gc
    from wisp.server.blobs import open_blob_store
    from wisp.server.store.facade import open_store
    from wisp.server.store.ingest import prepare_records

    url, media = f"sqlite:///{tmp_path / 'gc.db'}", str(tmp_path / "media")
    store, blobs = open_store(url), open_blob_store(media)
    kept, orphan = b"kept-bytes", b"orphan-bytes"
    shas = [hashlib.sha256(b).hexdigest() for b in (kept, orphan)]
    for sha, data in zip(shas, (kept, orphan), strict=True):
        blobs.put(sha, [data])
        store.media_add(sha, len(data), ".png")
    recs = [
        {"type": 1, "data": {"project": "p"}},
        history([(0, 1.0, {"img": {"_type": "image", "sha256": shas[0]}})]),
    ]
    store.ingest("r1", "w", 0, prepare_records(recs))
    store.close()
    assert media_gc(url, media, older_than_days=1.0) == (0, 0)  # too recent to judge
    time.sleep(0.01)
    assert media_gc(url, media, older_than_days=0, dry_run=True) == (1, len(orphan))
    assert blobs.exists(shas[1])
    assert media_gc(url, media, older_than_days=0) == (1, len(orphan))
    assert blobs.exists(shas[0]) and not blobs.exists(shas[1])


def test_console_cursor_beyond_32_bits(api: Any) -> None:
    """`console?after=N` with N past 2**31 answers 200 on both databases (64-bit ids)."""
    batch = {
        "writer_id": "w",
        "first_seq": 0,
        "records": [
            {"type": 1, "data": {"project": "p"}},
            {"type": 7, "data": {"lines": [[1.0, "stdout", "x"]]}},
        ],
    }
    assert api.post("/api/v1/runs/r1/records", json=batch).status_code == 200
    r = api.get(f"/api/v1/runs/r1/console?after={2**31 + 5}")
    assert r.status_code == 200 and r.json() == {"lines": []}
    assert len(api.get("/api/v1/runs/r1/console?after=-1").json()["lines"]) == 1


def test_media_quota_per_user(settings: Any, store: Any) -> None:
    """Past their media quota a user's uploads are refused (413 quota); others still upload."""
    from wisp.server import create_app

    settings.media_quota_bytes = 100
    app = create_app(settings, store=store)
    clients = {}
    for name in ("alice", "bob"):
        key = store.create_key("write", name, store.users.add_user(name))[1]
        clients[name] = TestClient(app, headers={"Authorization": f"Bearer {key}"})
    first, second = b"a" * 80, b"b" * 80
    put = clients["alice"].put
    assert (
        put(f"/api/v1/media/{hashlib.sha256(first).hexdigest()}", content=first).status_code == 201
    )
    r = put(f"/api/v1/media/{hashlib.sha256(second).hexdigest()}", content=second)
    assert r.status_code == 413 and r.json()["error"]["code"] == "quota"
    bob = clients["bob"].put(f"/api/v1/media/{hashlib.sha256(second).hexdigest()}", content=second)
    assert bob.status_code == 201


def test_requests_per_key_are_rate_limited(settings: Any, store: Any) -> None:
    """Past its burst a key gets 429 rate_limited; another key is not slowed by it."""
    from wisp.server import create_app

    settings.key_rate = 5.0
    app = create_app(settings, store=store)
    a = TestClient(app, headers={"Authorization": f"Bearer {store.create_key('read')[1]}"})
    b = TestClient(app, headers={"Authorization": f"Bearer {store.create_key('read')[1]}"})
    codes = [a.get("/api/v1/projects").status_code for _ in range(30)]
    assert codes[:10] == [200] * 10 and 429 in codes
    assert b.get("/api/v1/projects").status_code == 200


def test_failed_sign_ins_are_limited(app: Any, alice: int) -> None:
    """After 10 wrong passwords for a name from one address, even the right one from there is
    refused for a while (429; other addresses: tests/server/test_attacks.py)."""
    c = TestClient(app)
    for _ in range(10):
        r = c.post("/api/v1/auth/login", json={"name": "alice", "password": "wrong guess"})
        assert r.status_code == 401
    r = c.post("/api/v1/auth/login", json={"name": "alice", "password": "correct horse"})
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
