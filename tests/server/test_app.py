"""The app factory: dashboard static files with SPA fallback, or a note when not built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from wisp.server import create_app


def test_static_files_and_spa_fallback(settings: Any, store: Any, tmp_path: Path) -> None:
    """Built files are served, unknown non-API paths get index.html, API paths stay JSON."""
    static = Path(settings.static_dir)
    (static / "assets").mkdir(parents=True)
    (static / "index.html").write_text("<html>dash</html>")
    (static / "assets" / "app.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("no")
    c = TestClient(create_app(settings, store=store))
    assert c.get("/").text == "<html>dash</html>"
    assert c.get("/assets/app.js").text == "console.log(1)"
    assert c.get("/projects/p/runs/x").text == "<html>dash</html>"
    assert c.get("/..%2Fsecret.txt").text == "<html>dash</html>"
    r = c.get("/api/v1/unknown")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_without_ui_root_says_so(settings: Any, store: Any) -> None:
    """Without built dashboard files, / explains that the UI is not built."""
    c = TestClient(create_app(settings, store=store))
    r = c.get("/")
    assert r.status_code == 200 and "not built" in r.text
