"""Media, console output and system metrics in the dashboard, in a real browser, for a run
logged by the real SDK (wisp.Image, wisp.Histogram, wisp.Table) and imported by ``wisp ui``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, save_shot, start_dashboard

IMAGE_STEPS = 5
HIST_STEPS = 10
TABLE_ROWS = 45

SCRIPT = f"""
import time, numpy as np, wisp
run = wisp.init(project="media", name="media-run",
                settings={{"console": "wrap", "system_metrics": True, "system_interval": 0.1}})
rng = np.random.default_rng(0)
print("hello from stdout")
import sys; print("careful: stderr line", file=sys.stderr)
for step in range({HIST_STEPS}):
    row = {{"loss": 1.0 / (step + 1),
           "weights": wisp.Histogram(rng.normal(loc=step, scale=1.0, size=2000), num_bins=32)}}
    if step < {IMAGE_STEPS}:
        img = np.zeros((8, 12, 3)); img[:, : step + 1, 0] = 1.0
        row["pred/image"] = wisp.Image(img, caption=f"prediction {{step}}")
        row["pred/batch"] = [wisp.Image(rng.random((6, 6))) for _ in range(3)]
    wisp.log(row, step=step)
table = wisp.Table(columns=["id", "image", "score", "label"])
for i in range({TABLE_ROWS}):
    table.add_data(i, wisp.Image(rng.random((8, 8))), float((i * 37) % {TABLE_ROWS}), f"c{{i % 3}}")
wisp.log({{"predictions": table}}, step={HIST_STEPS})
time.sleep(0.6)  # a few system samples
run.finish()
"""


@pytest.fixture(scope="module")
def media_dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dashboard, str]]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("media-work")
    env = {**os.environ, "WISP_DIR": str(work)}
    subprocess.run([sys.executable, "-c", SCRIPT], cwd=work, env=env, check=True, timeout=120)
    d = start_dashboard(work, tmp_path_factory.mktemp("media-data"))
    with urllib.request.urlopen(f"{d.url}/api/v1/projects/media/runs", timeout=10) as r:
        rid = json.load(r)["runs"][0]["id"]
    yield d, rid
    d.stop.set()
    d.thread.join(30)


def _open(page: Any, md: tuple[Dashboard, str], tab: str) -> None:
    d, rid = md
    page.goto(f"{d.url}/#/p/media/r/{rid}?tab={tab}")
    page.wait_for_selector(f'[role="tab"][data-tab="{tab}"][aria-selected="true"]')


def _images_loaded(page: Any, selector: str) -> list[int]:
    """Wait until every image under ``selector`` has loaded; their natural widths."""
    page.wait_for_function(
        "s => { const l = [...document.querySelectorAll(s)];"
        " return l.length > 0 && l.every(i => i.complete && i.naturalWidth > 0); }",
        arg=selector,
    )
    return list(page.locator(selector).evaluate_all("l => l.map(i => i.naturalWidth)"))


def test_images_show_with_step_slider_and_gallery(media_dash: Any, page: Any, shots: Path):
    """Logged images load from the server; the slider picks a step and the gallery shows all."""
    _open(page, media_dash, "media")
    sec = '[data-media-key="pred/image"]'
    assert _images_loaded(page, f"{sec} img") == [12]  # the last step, at its natural size
    assert page.locator(f"{sec} figure").get_attribute("data-step") == str(IMAGE_STEPS - 1)
    page.locator(f"{sec} .step-slider").fill("0")
    page.wait_for_selector(f'{sec} figure[data-step="0"]')
    assert "prediction 0" in page.locator(f"{sec} figcaption").inner_text()
    page.locator(f'{sec} input[aria-label="gallery"]').check()
    assert _images_loaded(page, f"{sec} img") == [12] * IMAGE_STEPS
    # a list of images logged under one key shows every item of the chosen step
    assert _images_loaded(page, '[data-media-key="pred/batch"] img') == [6, 6, 6]
    page.locator(f'{sec} input[aria-label="gallery"]').uncheck()
    _images_loaded(page, ".media img")
    save_shot(page, shots, "media", full_page=True)


def test_histogram_heatmap_draws_every_step(media_dash: Any, page: Any):
    """The histograms over steps are drawn as a heat-map whose peak moves with the data."""
    _open(page, media_dash, "media")
    canvas = page.locator('[data-media-key="weights"] canvas.heatmap')
    canvas.wait_for()
    assert canvas.get_attribute("data-drawn") == "1"
    assert canvas.get_attribute("data-columns") == str(HIST_STEPS)
    # the yellowest cell (viridis: the largest count) of the first and last columns: the mean
    # grows with the step, so the last column's peak is drawn higher up (smaller y)
    peaks = canvas.evaluate(
        """c => { const ctx = c.getContext('2d'); const n = +c.dataset.columns;
          const [l, t, w, h] = c.dataset.plot.split(',').map(Number);
          const peak = (col) => { const x = Math.floor(l + (col + 0.5) * w / n); let best = -1, by = -1;
            const d = ctx.getImageData(x, t, 1, h).data;
            for (let y = 0; y < h; y++) { const lum = d[4 * y] + d[4 * y + 1] - 2 * d[4 * y + 2];
              if (lum > best) { best = lum; by = t + y; } } return [by, best]; };
          return [peak(0), peak(n - 1)]; }"""
    )
    (first_y, first_a), (last_y, last_a) = peaks
    assert first_a > 200 and last_a > 200  # viridis yellow-green, not the grey background
    assert last_y < first_y
    assert canvas.get_attribute("data-axes") == "step,value,count"
    # hovering the last column's peak reads out its step and a non-zero count
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    scale = box["height"] / canvas.evaluate("c => c.height")
    plot = [float(v) for v in (canvas.get_attribute("data-plot") or "").split(",")]
    x_last = plot[0] + plot[2] * (1 - 0.5 / HIST_STEPS)  # the middle of the last column
    sx = box["width"] / canvas.evaluate("c => c.width")
    canvas.hover(position={"x": x_last * sx, "y": last_y * scale + 1})
    page.wait_for_function(
        "() => document.querySelector('[data-media-key=\"weights\"] .heatmap-readout')"
        ".textContent.startsWith('step')"
    )
    readout = page.locator('[data-media-key="weights"] .heatmap-readout').inner_text()
    assert readout.startswith(f"step {HIST_STEPS - 1} · values") and not readout.endswith("count 0")
    # the chart toolbar belongs to the chart tabs, not to media
    assert page.locator(".run-page > .toolbar").is_hidden()


def test_table_pages_sorts_and_shows_inline_images(media_dash: Any, page: Any):
    """A logged table pages through its rows, sorts by a column and shows its images inline."""
    _open(page, media_dash, "media")
    sec = '[data-media-key="predictions"]'
    page.wait_for_selector(f"{sec} table.data tbody tr")
    assert page.locator(f"{sec} .paged").get_attribute("data-total") == str(TABLE_ROWS)
    assert page.locator(f"{sec} tbody tr").count() == 20
    assert page.locator(f"{sec} .page-label").inner_text() == f"page 1 / 3 · {TABLE_ROWS} rows"
    assert _images_loaded(page, f"{sec} tbody img.thumb") == [8] * 20
    page.locator(f"{sec} button", has_text="next").click()
    page.locator(f"{sec} button", has_text="next").click()
    assert page.locator(f"{sec} tbody tr").count() == TABLE_ROWS - 40
    page.locator(f"{sec} th button", has_text="score").click()  # ascending
    page.locator(f"{sec} th button", has_text="score").click()  # descending
    page.locator(f"{sec} button", has_text="prev").click()
    page.locator(f"{sec} button", has_text="prev").click()
    scores = page.locator(f"{sec} tbody tr td:nth-child(3)").all_inner_texts()
    assert [float(s) for s in scores] == [
        float(v) for v in range(TABLE_ROWS - 1, TABLE_ROWS - 21, -1)
    ]


def test_console_tab_shows_captured_output(media_dash: Any, page: Any):
    """Captured stdout and stderr lines appear on the console tab, stderr marked."""
    _open(page, media_dash, "console")
    page.wait_for_function(
        "() => (document.querySelector('#console')?.textContent || '').includes('hello from stdout')"
    )
    assert page.locator("#console .err").first.inner_text().strip() == "careful: stderr line"


def test_system_tab_charts_system_metrics(media_dash: Any, page: Any):
    """System samples are charted on the system tab, against time since the run started."""
    _open(page, media_dash, "system")
    page.locator('[data-cell="system/rss_mb"]').scroll_into_view_if_needed()
    chart = page.locator('figure.chart[data-key="system/rss_mb"]')
    page.wait_for_selector('figure.chart[data-key="system/rss_mb"][data-drawn]')
    d = chart.evaluate("el => ({...el.dataset})")
    assert int(d["count"]) >= 2
    assert float(d["ymax"]) > 1  # MiB of a live Python process
    assert 0 <= float(d["xmin"]) < 60  # seconds since the run started
