"""Audio, video, HTML, point clouds and wisp.plot charts in the dashboard, in real Chromium,
for runs logged by the real SDK and imported by ``wisp ui``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, start_dashboard

VIDEOS = 40
SCRIPT = f"""
import numpy as np, wisp
rng = np.random.default_rng(0)
for name in ("kinds-a", "kinds-b"):
    run = wisp.init(project="kinds", name=name)
    t = np.arange(16000) / 16000
    y, x = np.mgrid[0:64, 0:64]
    frames = np.stack([np.stack([(x * 4 + i * 16) % 256, y * 4, np.full_like(x, 90)])
                       for i in range(16)]).astype(np.uint8)
    html = ('<html><body><p id=p>report</p><script>'
            'let r; try {{ r = "origin=" + window.origin + " storage=" + localStorage.getItem("k"); }}'
            ' catch (e) {{ r = "origin=" + window.origin + " blocked=" + e.name; }}'
            ' try {{ r += " parent=" + parent.document.title; }} catch (e) {{ r += " parent=" + e.name; }}'
            ' parent.postMessage(r, "*");</script></body></html>')
    wisp.log({{
        "sound": wisp.Audio(np.sin(2 * np.pi * 440 * t).astype(np.float32) * 0.5,
                            sample_rate=16000, caption="440 Hz"),
        "rollout": wisp.Video(frames, fps=8, caption="moving"),
        "report": wisp.Html(html),
        "cloud": wisp.Object3D(rng.normal(size=(20000, 6)) * [1, 1, 1, 0, 0, 0]
                               + [0, 0, 0, 255, 120, 30]),
        "cm": wisp.plot.confusion_matrix(preds=[0, 1, 1, 2, 2, 2], y_true=[0, 1, 2, 2, 2, 0],
                                         class_names=["cat", "dog", "owl"]),
        "roc": wisp.plot.roc_curve(rng.integers(0, 2, 500), rng.random((500, 2)),
                                   labels=["neg", "pos"]),
    }}, step=0)
    if name == "kinds-a":
        wisp.log({{"rollout": wisp.Video(frames[::-1].copy(), fps=8)}}, step=1)
        tri = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
        faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
        lines = ["solid t"]
        for f in faces:
            lines += ["facet normal 0 0 0", "outer loop"]
            lines += ["vertex %g %g %g" % tri[k] for k in f] + ["endloop", "endfacet"]
        open("tetra.stl", "w").write(chr(10).join(lines + ["endsolid t", ""]))
        lines = ["v %g %g %g" % v for v in tri] + ["f %d %d %d" % (a + 1, b + 1, c + 1)
                                                   for a, b, c in faces]
        open("tetra.obj", "w").write(chr(10).join(lines + [""]))
        wisp.log({{"mesh/stl": wisp.Object3D("tetra.stl"), "mesh/obj": wisp.Object3D("tetra.obj")}},
                 step=1)
        for i in range({VIDEOS}):  # many videos: only those on screen may be downloaded
            f = np.full((2, 3, 16, 16), i * 6, dtype=np.uint8)
            wisp.log({{f"many/v{{i:02d}}": wisp.Video(f, fps=2)}}, step=1)
    run.finish()
"""


@pytest.fixture(scope="module")
def kinds_dash(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Dashboard, dict[str, str]]]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("kinds-work")
    env = {**os.environ, "WISP_DIR": str(work)}
    subprocess.run([sys.executable, "-c", SCRIPT], cwd=work, env=env, check=True, timeout=180)
    d = start_dashboard(work, tmp_path_factory.mktemp("kinds-data"))
    with urllib.request.urlopen(f"{d.url}/api/v1/projects/kinds/runs", timeout=10) as r:
        ids = {run["name"]: run["id"] for run in json.load(r)["runs"]}
    want = {"kinds-a": 6 + 1 + 2 + VIDEOS, "kinds-b": 6}
    deadline = time.monotonic() + 60
    for name, n in want.items():  # wait until wisp ui has imported every media value
        while True:
            with urllib.request.urlopen(f"{d.url}/api/v1/runs/{ids[name]}/media") as r:
                if len(json.load(r)["media"]) >= n or time.monotonic() > deadline:
                    break
            time.sleep(0.2)
    yield d, ids
    d.stop.set()
    d.thread.join(30)


def _open(page: Any, kd: tuple[Dashboard, dict[str, str]]) -> str:
    d, ids = kd
    page.goto(f"{d.url}/#/p/kinds/r/{ids['kinds-a']}?tab=media")
    page.wait_for_selector('[role="tab"][data-tab="media"][aria-selected="true"]')
    return d.url


def _played(page: Any, selector: str) -> tuple[float, float]:
    """Play the element; (its duration, how far it got)."""
    el = page.locator(selector)
    el.scroll_into_view_if_needed()
    page.wait_for_function(
        "s => { const e = document.querySelector(s); return e && e.readyState >= 1 && e.duration > 0; }",
        arg=selector,
    )
    el.evaluate("e => { e.muted = true; return e.play(); }")
    page.wait_for_function("s => document.querySelector(s).currentTime > 0.2", arg=selector)
    return el.evaluate("e => [e.duration, e.currentTime]")


def test_audio_plays_and_draws_its_waveform(kinds_dash: Any, page: Any):
    """The audio element reports the clip's 1 s duration and advances; the waveform is drawn."""
    _open(page, kinds_dash)
    duration, now = _played(page, '[data-media-key="sound"] audio')
    assert abs(duration - 1.0) < 0.01 and now > 0.2
    page.wait_for_selector('[data-media-key="sound"] canvas.waveform[data-drawn="1"]')
    assert "440 Hz" in page.locator('[data-media-key="sound"] figcaption').inner_text()


def test_video_plays(kinds_dash: Any, page: Any):
    """The H.264 video reports 16 frames at 8 fps (2 s) and playback advances."""
    _open(page, kinds_dash)
    duration, now = _played(page, '[data-media-key="rollout"] video')
    assert abs(duration - 2.0) < 0.1 and now > 0.2
    size = page.locator('[data-media-key="rollout"] video').evaluate(
        "v => [v.videoWidth, v.videoHeight]"
    )
    assert size == [64, 64]


def test_video_step_slider_picks_the_step(kinds_dash: Any, page: Any):
    """A video logged at two steps shows the last; the step slider switches to the first."""
    _open(page, kinds_dash)
    sec = '[data-media-key="rollout"]'
    page.locator(sec).scroll_into_view_if_needed()
    page.wait_for_function(f"() => document.querySelector('{sec} video').src !== ''")
    assert page.locator(f"{sec} figure").get_attribute("data-step") == "1"
    last = page.locator(f"{sec} video").get_attribute("src")
    page.locator(f"{sec} .step-slider").fill("0")
    page.wait_for_selector(f'{sec} figure[data-step="0"]')
    page.wait_for_function(f"() => document.querySelector('{sec} video').src !== ''")
    first = page.locator(f"{sec} video").get_attribute("src")
    assert first and first != last
    assert page.locator(f"{sec} .step-label").inner_text() == "step 0 (1/2)"


def test_only_videos_on_screen_are_downloaded(kinds_dash: Any, page: Any):
    """With 40 videos logged, opening the media tab fetches only the few near the viewport."""
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if r.url.endswith(".mp4") else None)
    _open(page, kinds_dash)
    page.wait_for_selector('[data-media-key="many/v00"]')
    page.wait_for_timeout(800)
    first = len(fetched)
    assert first < VIDEOS // 2, first
    page.locator('[data-media-key="many/v39"]').scroll_into_view_if_needed()
    page.wait_for_function(
        "() => document.querySelector('[data-media-key=\"many/v39\"] video').src !== ''"
    )
    assert page.locator('[data-media-key="many/v39"] video').get_attribute("src")


def test_point_cloud_canvas_is_not_blank(kinds_dash: Any, page: Any):
    """The 20k-point cloud is drawn by three.js: the WebGL canvas holds the points' colour."""
    _open(page, kinds_dash)
    sec = '[data-media-key="cloud"]'
    page.locator(sec).scroll_into_view_if_needed()
    page.wait_for_selector(f'{sec} .scene3d[data-drawn="1"]')
    assert page.locator(f"{sec} .scene3d").get_attribute("data-points") == "20000"
    lit = page.locator(f"{sec} canvas").evaluate(
        """c => { const t = document.createElement('canvas'); t.width = c.width; t.height = c.height;
          const g = t.getContext('2d'); g.drawImage(c, 0, 0);
          const d = g.getImageData(0, 0, t.width, t.height).data; let n = 0;
          for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] > 80 && d[i + 1] < 160) n++;
          return n; }"""
    )
    assert lit > 500, lit  # orange (255, 120, 30) pixels on the dark background


@pytest.mark.parametrize("fmt", ["stl", "obj"])
def test_mesh_files_are_drawn(kinds_dash: Any, page: Any, fmt: str):
    """An .stl or .obj file logged as it is is parsed by three.js and drawn (canvas not blank)."""
    _open(page, kinds_dash)
    sec = f'[data-media-key="mesh/{fmt}"]'
    page.locator(sec).scroll_into_view_if_needed()
    page.wait_for_selector(f'{sec} .scene3d[data-format="{fmt}"][data-drawn="1"]')
    lit = page.locator(f"{sec} canvas").evaluate(
        """c => { const t = document.createElement('canvas'); t.width = c.width; t.height = c.height;
          const g = t.getContext('2d'); g.drawImage(c, 0, 0);
          const d = g.getImageData(0, 0, t.width, t.height).data; let n = 0;
          for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] > 150) n++;
          return n; }"""
    )
    assert lit > 1000, lit  # the lit grey mesh on the dark background


def test_confusion_matrix_cells_carry_counts(kinds_dash: Any, page: Any):
    """The confusion matrix is a heat grid whose cells show the logged counts."""
    _open(page, kinds_dash)
    sec = '[data-media-key="cm"]'
    page.locator(sec).scroll_into_view_if_needed()
    page.wait_for_selector(f"{sec} td.cm-cell")
    cells = page.locator(f"{sec} td.cm-cell").evaluate_all(
        "l => l.map(c => [c.dataset.actual, c.dataset.predicted, c.textContent])"
    )
    counts = {(a, p): int(n) for a, p, n in cells}
    assert counts[("cat", "cat")] == 1 and counts[("owl", "owl")] == 2
    assert counts[("owl", "dog")] == 1 and counts[("cat", "owl")] == 1
    assert sum(counts.values()) == 6 and len(counts) == 9


def test_roc_curve_is_a_chart_with_a_legend(kinds_dash: Any, page: Any):
    """The ROC curve is drawn by uPlot with one series per class named in the legend; hover
    fills the legend, a drag zooms in and a double-click zooms out."""
    _open(page, kinds_dash)
    sec = '[data-media-key="roc"]'
    page.locator(sec).scroll_into_view_if_needed()
    page.wait_for_selector(f'{sec} .custom-chart[data-drawn="1"]')
    assert page.locator(f"{sec} .custom-chart").get_attribute("data-series") == "2"
    legend = page.locator(f"{sec} .u-legend").inner_text()
    assert "neg" in legend and "pos" in legend
    chart = page.locator(f"{sec} .custom-chart")
    span = float(chart.get_attribute("data-xmax")) - float(chart.get_attribute("data-xmin"))
    over = page.locator(f"{sec} .u-over")
    box = over.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)  # hover: the legend shows values
    assert page.locator(f"{sec} .u-legend .u-value").nth(1).inner_text() != ""
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y + 2, steps=5)
    page.mouse.up()  # a drag zooms in on x
    page.wait_for_function(
        "([s, w]) => { const c = document.querySelector(s); return +c.dataset.xmax - +c.dataset.xmin < w * 0.5; }",
        arg=[f"{sec} .custom-chart", span],
    )
    page.locator(f"{sec} .u-over").dblclick()  # double-click: back to the whole curve
    page.wait_for_function(
        "([s, w]) => { const c = document.querySelector(s); return +c.dataset.xmax - +c.dataset.xmin >= w * 0.99; }",
        arg=[f"{sec} .custom-chart", span],
    )


def test_html_cannot_run_script_with_the_dashboards_origin(kinds_dash: Any, page: Any):
    """Logged HTML runs in an opaque origin: no dashboard storage, no access to the parent, and
    the same holds when its URL is opened directly (the server's CSP sandbox)."""
    url = _open(page, kinds_dash)
    page.evaluate("() => localStorage.setItem('k', 'secret')")
    page.evaluate(
        "() => { window.__msgs = []; addEventListener('message', e => window.__msgs.push(e.data)); }"
    )
    page.reload()
    page.evaluate(
        "() => { window.__msgs = []; addEventListener('message', e => window.__msgs.push(String(e.data))); }"
    )
    sec = '[data-media-key="report"]'
    frame = page.locator(f"{sec} iframe")
    frame.scroll_into_view_if_needed()
    assert frame.get_attribute("sandbox") == "allow-scripts"
    page.wait_for_function("() => window.__msgs.length > 0")
    msg = page.evaluate("() => window.__msgs[0]")
    assert msg.startswith("origin=null") and "secret" not in msg and "parent=SecurityError" in msg
    src = frame.get_attribute("src")
    resp = page.request.get(url + src if src.startswith("/") else src)
    assert "sandbox" in resp.headers["content-security-policy"]
    assert "allow-same-origin" not in resp.headers["content-security-policy"]
    direct = page.context.new_page()
    direct.goto(url + src if src.startswith("/") else src)
    assert direct.evaluate("() => window.origin") == "null"
    assert (
        direct.evaluate(
            "() => { try { return localStorage.getItem('k'); } catch (e) { return e.name; } }"
        )
        != "secret"
    )
    direct.close()


def test_compare_view_puts_media_side_by_side(kinds_dash: Any, page: Any):
    """The compare page shows one media key for every compared run, side by side."""
    d, ids = kinds_dash
    page.goto(f"{d.url}/#/p/kinds/compare?runs={ids['kinds-a']},{ids['kinds-b']}")
    cell = page.locator('[data-cell="cm"]')
    cell.scroll_into_view_if_needed()
    cols = cell.locator("figure.media-cell .media-compare-col")
    cols.first.wait_for()
    assert cols.count() == 2
    cell.locator(".media-compare-col td.cm-cell").first.wait_for()
    assert cell.locator(".media-compare-col table.confusion").count() == 2
    # a media key is a media panel, never an empty chart frame
    assert page.locator('[data-cell="cm"] .uplot').count() == 0
