"""Fixtures for the browser tests: runs logged by the real SDK, the real server started
by ``wisp ui`` (which imports them through the ingestion API), and Debian's Chromium
driven by Playwright.  Nothing here is mocked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wisp.testing import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "wisp" / "server" / "static" / "index.html"
SPIKE_STEP = 777
SPIKE = 1000.0
STEPS = 20_000
# read once at import: the autouse fixture in tests/conftest.py clears WISP_* for each test
UPDATE_SHOTS = bool(os.environ.get("WISP_UPDATE_SCREENSHOTS"))


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required for the browser tests in CI")
    pytest.skip(f"{what} is not available (run `make chromium web`)")


def log_runs(workdir: Path) -> None:
    """Three finished runs in ``workdir/wisp``, logged by the real SDK in a subprocess."""
    script = f"""
import math, wisp
for i, lr in enumerate([0.1, 0.01, 0.001]):
    run = wisp.init(project="browser", name=f"run-lr{{lr}}", config={{"lr": lr, "layers": 2 + i}},
                    tags=["baseline"] if i == 0 else ["sweep"], group="g1" if i < 2 else "g2")
    wisp.define_metric("val/*", step_metric="epoch")
    for step in range({STEPS}):
        loss = 1.0 / (1 + step * lr) + 0.01 * math.sin(step)
        if step == {SPIKE_STEP} and i == 0:
            loss = {SPIKE}
        row = {{"train/loss": loss, "train/acc": 1 - loss / 2}}
        if step % 1000 == 999:
            row["val/loss"] = loss
            row["epoch"] = step // 1000
        wisp.log(row, step=step)
    run.finish()
"""
    env = {**os.environ, "WISP_DIR": str(workdir)}
    subprocess.run([sys.executable, "-c", script], cwd=workdir, env=env, check=True, timeout=120)


class Dashboard:
    """A running ``wisp ui`` on a temporary data dir."""

    def __init__(self, url: str, stop: threading.Event, thread: threading.Thread, workdir: Path):
        self.url = url
        self.stop = stop
        self.thread = thread
        self.workdir = workdir


def start_dashboard(workdir: Path, datadir: Path, only: bool = False) -> Dashboard:
    from wisp._ui import ui

    ready = threading.Event()
    box: dict[str, Any] = {}
    stop = threading.Event()

    def on_ready(url: str) -> None:
        box["url"] = url
        ready.set()

    def target() -> None:
        try:
            ui(
                port=free_port(),
                dir=str(workdir),
                data=str(datadir),
                poll_interval=0.25,
                stop=stop,
                ready=on_ready,
                only=only,
            )
        except Exception as e:  # noqa: BLE001 - surfaced to the test below
            box["error"] = e
            ready.set()

    t = threading.Thread(target=target, name="wisp-ui-test", daemon=True)
    t.start()
    if not ready.wait(60):
        stop.set()
        pytest.fail("wisp ui did not start within 60 s")
    if "error" in box:
        raise box["error"]
    return Dashboard(box["url"], stop, t, workdir)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("work")
    log_runs(work)
    d = start_dashboard(work, tmp_path_factory.mktemp("data"))
    yield d
    d.stop.set()
    d.thread.join(30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        _missing("Debian's chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package (pip install -e '.[test-web]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = ctx.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Screenshots go to the test output; WISP_UPDATE_SCREENSHOTS=1 copies them to docs/."""
    return tmp_path_factory.mktemp("screenshots")


def save_shot(page: Any, shots: Path, name: str, full_page: bool = False) -> Path:
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    if UPDATE_SHOTS:
        dest = ROOT / "docs" / "screenshots"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest / path.name)
    return path
