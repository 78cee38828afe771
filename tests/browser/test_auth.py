"""Signing in to a shared server in a real browser: the login page, a session that loads
images, CSRF on writes, sign-out, and uploaded HTML/SVG media that cannot touch the
dashboard.  The server is a real ``wisp server`` process with auth (``wisp.testing``)."""

from __future__ import annotations

import hashlib
import itertools
import json
import struct
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import STATIC, _missing
from wisp.testing import Server

PASSWORD = "a long enough password"
HTML = b"""<html><body><script>
try { top.document.title = "pwned"; } catch (e) {}
try { top.localStorage.setItem("pwned", "1"); } catch (e) {}
fetch("/api/v1/keys").then(r => r.text()).then(t => top.postMessage("leak:" + t, "*"), () => {});
</script></body></html>"""
SVG = (
    b"""<svg xmlns="http://www.w3.org/2000/svg"><script>top.document.title="pwned"</script></svg>"""
)


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 4 for _ in range(4))
    ihdr = struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _call(srv: Server, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(
        f"{srv.url}/api/v1{path}", data, {"Authorization": f"Bearer {srv.key}"}, method=method
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server with user alice (password), her run showing an image, and HTML/SVG media."""
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    from wisp.server import users_add

    base: Path = tmp_path_factory.mktemp("authsrv")
    srv = Server(base, key="unused")
    users_add("alice", PASSWORD, db=srv.db_url)
    from wisp.server import keys_create

    srv.key = keys_create("write", "alice", db=srv.db_url, user="alice")[1]
    png = _png()
    shas = {
        n: hashlib.sha256(b).hexdigest() for n, b in (("png", png), ("html", HTML), ("svg", SVG))
    }
    with srv:
        rows = [
            [
                0,
                1.0,
                {"loss": 0.5, "img": {"_type": "image", "sha256": shas["png"], "path": "x.png"}},
            ]
        ]
        batch = {
            "writer_id": "w",
            "first_seq": 0,
            "records": [
                {"type": 1, "data": {"project": "secret"}},
                {"type": 3, "data": {"rows": rows}},
            ],
        }
        _call(srv, "POST", "/runs/r1/records", batch)
        for name, data in (("png", png), ("html", HTML), ("svg", SVG)):
            _call(srv, "PUT", f"/media/{shas[name]}.{name}", raw=data)
        yield {"srv": srv, "shas": shas}


def _sign_in(page: Any, url: str, password: str = PASSWORD) -> None:
    page.goto(url + "/")
    page.fill("#login-user", "alice")
    page.fill("#login-password", password)
    page.click("#login-submit")


def test_login_page_then_projects_and_images_under_the_session(
    page: Any, server: dict[str, Any]
) -> None:
    """The dashboard asks for a password; after sign-in it lists the project and an <img> loads."""
    url = server["srv"].url
    _sign_in(page, url, "wrong password!")
    page.wait_for_selector("#login-error:has-text('wrong user name or password')")
    _sign_in(page, url)
    page.wait_for_selector("text=secret")
    sha = server["shas"]["png"]
    width = page.evaluate(
        """(src) => new Promise((ok) => { const i = new Image(); i.onload = () => ok(i.naturalWidth);
        i.onerror = () => ok(-1); i.src = src; })""",
        f"/api/v1/media/{sha}.png",
    )
    assert width == 4
    assert page.locator("#user").inner_text().startswith("alice")
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["wisp_session"]["httpOnly"] and cookies["wisp_session"]["sameSite"] == "Strict"


def test_writes_need_the_csrf_token_and_sign_out_ends_the_session(
    page: Any, server: dict[str, Any]
) -> None:
    """A fetch without X-CSRF-Token is refused, with it allowed; after sign-out reads are 401."""
    _sign_in(page, server["srv"].url)
    page.wait_for_selector("text=secret")
    codes = page.evaluate(
        """async () => {
          const body = JSON.stringify({name: "renamed"});
          const h = {"Content-Type": "application/json"};
          const bare = await fetch("/api/v1/runs/r1", {method: "PUT", headers: h, body});
          const tok = document.cookie.match(/wisp_csrf=([^;]+)/)[1];
          const ok = await fetch("/api/v1/runs/r1", {method: "PUT", headers: {...h, "X-CSRF-Token": tok}, body});
          return [bare.status, ok.status];
        }"""
    )
    assert codes == [403, 200]
    page.click("#sign-out")
    page.wait_for_selector("#login-form")
    assert page.evaluate("async () => (await fetch('/api/v1/runs/r1')).status") == 401


def test_html_and_svg_media_cannot_touch_the_dashboard(page: Any, server: dict[str, Any]) -> None:
    """Uploaded HTML/SVG framed in the dashboard neither run against it nor read its data;
    SVG opened directly downloads (HTML stays inline for the dashboard's sandboxed frame)."""
    _sign_in(page, server["srv"].url)
    page.wait_for_selector("text=secret")
    page.evaluate(
        "() => { window.leaks = []; addEventListener('message', (e) => leaks.push(String(e.data))); }"
    )
    for name in ("html", "svg"):
        src = f"/api/v1/media/{server['shas'][name]}.{name}"
        page.evaluate(
            "(src) => { const f = document.createElement('iframe'); f.src = src; document.body.append(f); }",
            src,
        )
    page.wait_for_timeout(1500)
    assert page.title() != "pwned"
    assert page.evaluate("() => localStorage.getItem('pwned')") is None
    assert page.evaluate("() => window.leaks") == []
    with page.expect_download() as dl:
        page.evaluate(
            "(src) => { location.href = src; }", f"/api/v1/media/{server['shas']['svg']}.svg"
        )
    assert dl.value.suggested_filename


def test_account_page_creates_and_revokes_keys_and_sets_roles(
    page: Any, server: dict[str, Any]
) -> None:
    """Signed in, a user creates a key (shown once), sees it listed, revokes it, and as a
    team's admin gives a member a role; the key works against the API until revoked."""
    from wisp.server import teams_add, teams_member, users_add

    srv = server["srv"]
    teams_add("vision", db=srv.db_url)
    teams_member("vision", "alice", "admin", db=srv.db_url)
    users_add("bob", db=srv.db_url)
    _sign_in(page, srv.url)
    page.wait_for_selector("#account-link")
    page.click("#account-link")
    page.fill("#new-key-name", "from the browser")
    page.select_option("#new-key-scope", "read")
    page.click("#new-key button")
    secret = page.locator("#new-key-secret code").inner_text()
    assert secret.startswith("wisp_r_")
    page.wait_for_selector("#keys td:has-text('from the browser')")
    req = urllib.request.Request(
        f"{srv.url}/api/v1/runs/r1", headers={"Authorization": f"Bearer {secret}"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        assert json.loads(r.read())["id"] == "r1"
    row = page.locator("#keys tr", has_text="from the browser")
    row.locator("button:has-text('Revoke')").click()
    page.wait_for_selector("#keys tr:has-text('from the browser') td:has-text('revoked')")
    with pytest.raises(urllib.error.HTTPError, match="401") as refused:
        urllib.request.urlopen(req, timeout=10)
    refused.value.close()  # its socket, not left to a later test's garbage collection
    page.fill("#member-team", "vision")
    page.fill("#member-user", "bob")
    page.select_option("#member-role", "viewer")
    page.click("#set-member button")
    page.wait_for_selector("#teams td:has-text('bob (viewer)')")


def test_account_keys_table_has_one_header_cell_per_column(
    browser: Any, server: dict[str, Any]
) -> None:
    """At 1400x900 the API-keys table is a table: its seven headers side by side in one row,
    each key's cells under them, and its dates on one line (was: the header squeezed into one
    cell of a grid, "2026-11-\\n26 12:50")."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = ctx.new_page()
        _sign_in(page, server["srv"].url)
        page.wait_for_selector("#account-link")
        page.click("#account-link")
        page.fill("#new-key-name", "layout")
        page.click("#new-key button")
        page.wait_for_selector("#keys td:has-text('layout')")
        heads = page.eval_on_selector_all(
            "#keys thead th", "els => els.map(e => e.getBoundingClientRect().toJSON())"
        )
        assert len(heads) == 7
        assert len({round(h["top"]) for h in heads}) == 1
        assert all(a["right"] <= b["left"] + 1 for a, b in itertools.pairwise(heads))
        row = page.locator("#keys tbody tr", has_text="layout")
        cells = row.locator("td").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().toJSON())"
        )
        for h, c in zip(heads, cells, strict=True):
            assert c["left"] == pytest.approx(h["left"], abs=1)
            assert c["top"] >= h["bottom"] - 1
        lines = row.locator("time").evaluate_all("els => els.map(e => e.getClientRects().length)")
        assert lines and all(n == 1 for n in lines), lines
    finally:
        ctx.close()
