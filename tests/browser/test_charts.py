"""Charts and the compare page in real Chromium, for runs logged by the real SDK: gaps for
NaN / None / text, axis titles, the tooltip, run colours and labels, media keys as media
panels, legends, full-screen and per-chart settings, config diff, parallel coordinates,
scatter with a trend line, and zoom on images."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, save_shot, start_dashboard

COLOUR_RUNS = 20
MIN_DE2000 = 15.0  # the least CIEDE2000 difference between any two of 20 run colours

SCRIPT = f"""
import numpy as np, wisp
rng = np.random.default_rng(0)
run = wisp.init(project="charts", name="gappy", config={{"lr": 0.1, "layers": 2}})
wisp.define_metric("val/*", step_metric="epoch")
for s in range(100):
    v = 1.0 - s / 200
    if 40 <= s < 50: v = float("nan")
    elif 60 <= s < 65: v = None
    elif 70 <= s < 75: v = "oops"
    row = {{"loss": v, "acc": s / 100}}
    if s % 10 == 9:
        row["val/acc"] = s / 100
        row["epoch"] = s // 10
        row["weights/w1"] = wisp.Histogram(rng.normal(s / 10, 1, 500), num_bins=16)
    if s % 25 == 0:
        img = np.zeros((8, 8, 3)); img[:, : s // 25 + 1, 1] = 1.0
        row["predictions/img"] = wisp.Image(img, caption=f"pred {{s}}")
    wisp.log(row, step=s)
run.finish()
for i, (lr, opt) in enumerate([(0.01, "sgd"), (0.02, "adam"), (0.04, "adam")]):
    run = wisp.init(project="charts", name="twin",
                    config={{"lr": lr, "opt": opt, "layers": 2, "seed": 0}})
    for s in range(100):
        wisp.log({{"loss": 1.0 / (1 + s * lr * 10), "acc": s * lr}}, step=s)
    wisp.log({{"predictions/img": wisp.Image(rng.random((8, 8, 3)))}}, step=100)
    run.finish()
for i in range({COLOUR_RUNS}):
    run = wisp.init(project="colours", name=f"c{{i}}")
    wisp.log({{"m": float(i)}}, step=0)
    run.finish()
"""


@pytest.fixture(scope="module")
def charts_dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("charts-work")
    env = {**os.environ, "WISP_DIR": str(work)}
    subprocess.run([sys.executable, "-c", SCRIPT], cwd=work, env=env, check=True, timeout=180)
    d = start_dashboard(work, tmp_path_factory.mktemp("charts-data"))
    yield d
    d.stop.set()
    d.thread.join(30)


def _get(d: Dashboard, path: str) -> Any:
    with urllib.request.urlopen(d.url + path, timeout=10) as r:
        return json.load(r)


def _runs(d: Dashboard, project: str) -> list[dict[str, Any]]:
    q = urllib.parse.urlencode({"limit": 1000, "sort": "name", "order": "asc"})
    return list(_get(d, f"/api/v1/projects/{project}/runs?{q}")["runs"])


def _id(d: Dashboard, name: str) -> str:
    return next(r["id"] for r in _runs(d, "charts") if r["name"] == name)


def _twins(d: Dashboard) -> list[str]:
    return sorted(r["id"] for r in _runs(d, "charts") if r["name"] == "twin")


def _chart(page: Any, key: str) -> Any:
    page.locator(f'[data-cell="{key}"]').scroll_into_view_if_needed()
    chart = page.locator(f'figure.chart[data-key="{key}"]')
    page.wait_for_function(
        'k => !!document.querySelector(`figure.chart[data-key="${k}"]`)?.dataset.drawn', arg=key
    )
    return chart


def _titles(chart: Any) -> list[str]:
    """The x and y axis titles uPlot drew on the chart's canvas."""
    return list(chart.evaluate("el => [el.dataset.xTitle, el.dataset.yTitle]"))


# --- CIEDE2000 -------------------------------------------------------------------------------


def _lab(hex_: str) -> tuple[float, float, float]:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(hex_[i : i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def de2000(c1: str, c2: str) -> float:
    """CIEDE2000 colour difference of two #rrggbb colours (Sharma, Wu and Dalal, 2005)."""
    (l1, a1, b1), (l2, a2, b2) = _lab(c1), _lab(c2)
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb**7 / (cb**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1 = math.degrees(math.atan2(b1, a1p)) % 360
    h2 = math.degrees(math.atan2(b2, a2p)) % 360
    dh = 0.0 if c1p * c2p == 0 else (h2 - h1 + 180) % 360 - 180
    d_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lbp, cbp = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hbp = h1 + h2
    elif abs(h1 - h2) <= 180:
        hbp = (h1 + h2) / 2
    else:
        hbp = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(hbp - 30))
        + 0.24 * math.cos(math.radians(2 * hbp))
        + 0.32 * math.cos(math.radians(3 * hbp + 6))
        - 0.20 * math.cos(math.radians(4 * hbp - 63))
    )
    sl = 1 + 0.015 * (lbp - 50) ** 2 / math.sqrt(20 + (lbp - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    rt = -math.sin(math.radians(60 * math.exp(-(((hbp - 275) / 25) ** 2)))) * (
        2 * math.sqrt(cbp**7 / (cbp**7 + 25**7))
    )
    dl, dc, dhh = (l2 - l1) / sl, (c2p - c1p) / sc, d_h / sh
    return math.sqrt(dl * dl + dc * dc + dhh * dhh + rt * dc * dhh)


def test_de2000_matches_published_pairs() -> None:
    """The colour difference agrees with pairs from Sharma et al.'s CIEDE2000 test data."""
    assert de2000("#000000", "#ffffff") == pytest.approx(100.0, abs=0.01)
    assert de2000("#ff0000", "#ff0000") == 0.0
    assert 20 < de2000("#ff0000", "#00ff00") < 100


# --- charts ----------------------------------------------------------------------------------

PIXELS = """([key, step]) => {
  const c = [...window.__wisp.charts].find(c => c.key === key); const u = c.u;
  const pr = devicePixelRatio; const x = Math.round(u.valToPos(step, 'x', true));
  const top = Math.round(u.bbox.top), bot = Math.round(u.bbox.top + u.bbox.height - 14 * pr);
  const col = c.lines[0].color; const n = parseInt(col.slice(1), 16);
  const want = [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  let hits = 0;
  for (let dx = -2; dx <= 2; dx++) {
    const d = u.ctx.getImageData(x + dx, top, 1, bot - top).data;
    for (let i = 0; i < d.length; i += 4) {
      const dist = Math.abs(d[i] - want[0]) + Math.abs(d[i + 1] - want[1]) + Math.abs(d[i + 2] - want[2]);
      if (d[i + 3] > 200 && dist < 60) hits++;
    }
  }
  return hits;
}"""


def test_nan_none_and_text_break_the_line_with_markers(
    charts_dash: Dashboard, page: Any, shots: Path
):
    """NaN, None and text leave visible gaps in the plotted path, each marked and counted."""
    page.goto(f"{charts_dash.url}/#/p/charts/r/{_id(charts_dash, 'gappy')}")
    chart = _chart(page, "loss")
    d = chart.evaluate("el => ({...el.dataset})")
    assert d["gaps"] == "20" and d["gapMarks"] == "20"
    # the line's colour is on screen at healthy steps and absent over each gap
    for step in (20, 30, 55, 85):
        assert page.evaluate(PIXELS, ["loss", step]) > 0, step
    for step in (44, 45, 62, 72):
        assert page.evaluate(PIXELS, ["loss", step]) == 0, step
    assert "⚠ 20" in chart.locator(".chart-legend").inner_text()
    # the tooltip counts the non-finite value under the pointer
    box = chart.locator(".u-over").bounding_box()
    x = page.evaluate(
        "() => [...window.__wisp.charts].find(c => c.key === 'loss').u.valToPos(45, 'x')"
    )
    page.mouse.move(box["x"] + x, box["y"] + box["height"] / 2)
    tip = chart.locator(".tip")
    tip.wait_for()
    assert "not finite" in tip.inner_text() and "\u2013" in tip.inner_text()  # an en dash: no value
    save_shot(page, shots, "chart-gaps")


def test_tooltip_shows_raw_and_smoothed_values(charts_dash: Dashboard, page: Any):
    """With smoothing on, the tooltip shows each run's smoothed value and its raw value."""
    page.goto(
        f"{charts_dash.url}/#/p/charts/compare?runs={','.join(_twins(charts_dash))}&smooth=0.9"
    )
    chart = _chart(page, "loss")
    box = chart.locator(".u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
    rows = chart.locator(".tip [data-line]")
    rows.first.wait_for()
    assert rows.count() == 3
    smoothed = rows.first.locator(".smoothed").inner_text()
    raw = rows.first.locator(".raw").inner_text()
    assert raw.startswith(" raw ") or raw.startswith("raw ")
    assert float(smoothed) != float(raw.split()[-1])


def test_axis_titles_follow_x_choice_and_metric(charts_dash: Dashboard, page: Any):
    """Axis titles name the metric and the x actually used: epoch for val/*, wall time on request."""
    rid = _id(charts_dash, "gappy")
    page.goto(f"{charts_dash.url}/#/p/charts/r/{rid}")
    assert _titles(_chart(page, "loss")) == ["step", "loss"]
    assert _titles(_chart(page, "val/acc")) == ["epoch", "val/acc"]
    page.select_option("#x-axis", "time")
    page.wait_for_function(
        "() => document.querySelector('figure.chart[data-key=\"loss\"]').dataset.x === 'time'"
    )
    assert _titles(_chart(page, "loss"))[0] == "wall time"


def test_bad_x_in_url_shows_message_and_draws_against_step(charts_dash: Dashboard, page: Any):
    """An unknown x= in the URL is named in a message and the charts fall back to step."""
    page.goto(f"{charts_dash.url}/#/p/charts/r/{_id(charts_dash, 'gappy')}?x=bogus")
    err = page.locator("#x-error")
    err.wait_for()
    assert "x=bogus" in err.inner_text()
    d = _chart(page, "acc").evaluate("el => ({...el.dataset})")
    assert d["x"] == "step" and d["empty"] == "0" and int(d["count"]) == 100
    assert "x=bogus" not in page.url


def test_media_keys_are_media_panels_not_empty_charts(
    charts_dash: Dashboard, page: Any, shots: Path
):
    """Histogram and image keys in the chart grid show a heat-map and an image strip."""
    page.goto(f"{charts_dash.url}/#/p/charts/r/{_id(charts_dash, 'gappy')}")
    page.locator('[data-cell="weights/w1"]').scroll_into_view_if_needed()
    heat = page.locator('[data-cell="weights/w1"] figure.media-cell canvas.heatmap')
    heat.wait_for()
    d = heat.evaluate("el => ({...el.dataset})")
    assert d["axes"] == "step,value,count" and d["columns"] == "10"
    assert d["xTicks"].split(",")[0] == "9" and len(d["yTicks"].split(",")) >= 3
    assert d["scaleTicks"].split(",")[0] == "0"
    # the colour scale runs from viridis purple (0) at the bottom to yellow at the top
    ends = heat.evaluate(
        """c => { const [l, t, w, h] = c.dataset.plot.split(',').map(Number);
        const x = l + w + 22; const g = c.getContext('2d');
        return [g.getImageData(x, t + 2, 1, 1).data.slice(0, 3), g.getImageData(x, t + h - 2, 1, 1).data.slice(0, 3)]
          .map(a => Array.from(a)); }"""
    )
    (top_r, top_g, top_b), (bot_r, bot_g, bot_b) = ends
    assert top_r > 200 and top_g > 200 and top_b < 100  # yellow
    assert bot_r < 100 and bot_g < 40 and bot_b > 60  # purple
    img = page.locator('[data-cell="predictions/img"] figure.media-cell img.media-img')
    page.locator('[data-cell="predictions/img"]').scroll_into_view_if_needed()
    img.first.wait_for()
    assert page.locator('[data-cell="predictions/img"] .step-slider').count() == 1
    # no chart frame for a media key
    assert page.locator('[data-cell="weights/w1"] .uplot').count() == 0
    save_shot(page, shots, "chart-grid-media")


def test_run_colours_are_distinct_stable_and_user_chosen(charts_dash: Dashboard, page: Any):
    """20 runs get pairwise distinct colours (CIEDE2000 >= 15), the same in any order; a picked one sticks."""
    ids = [r["id"] for r in _runs(charts_dash, "colours")]
    assert len(ids) == COLOUR_RUNS

    def colours(order: list[str]) -> dict[str, str]:
        page.goto(f"{charts_dash.url}/#/p/colours/compare?runs={','.join(order)}")
        page.wait_for_selector("#legend input.run-color")
        return dict(
            page.locator("#legend input.run-color").evaluate_all(
                "els => els.map(e => [e.dataset.run, e.value])"
            )
        )

    first = colours(ids)
    assert colours(ids[::-1]) == first
    worst = min(de2000(a, b) for a, b in itertools.combinations(first.values(), 2))
    assert worst >= MIN_DE2000, worst
    # a colour picked by the user is used by the charts and kept across reloads
    page.locator(f'#legend input.run-color[data-run="{ids[3]}"]').fill("#123456")
    sw = _chart(page, "m").locator(f'.chart-legend li[data-run="{ids[3]}"] .swatch')
    assert sw.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(18, 52, 86)"
    assert colours(ids)[ids[3]] == "#123456"
    page.evaluate("() => localStorage.removeItem('wisp.runColors')")


def test_same_named_runs_are_told_apart_by_id(charts_dash: Dashboard, page: Any):
    """Runs that share a name are labelled with their id in the legend and the chart legends."""
    twins = _twins(charts_dash)
    page.goto(f"{charts_dash.url}/#/p/charts/compare?runs={','.join(twins)}")
    page.wait_for_selector("#legend li")
    texts = page.locator("#legend li a").all_inner_texts()
    assert sorted(texts) == sorted(f"twin ({i})" for i in twins)
    legend = _chart(page, "loss").locator(".chart-legend li").all_inner_texts()
    assert sorted(t.strip() for t in legend) == sorted(texts)


def test_chart_legend_hides_lines_and_full_screen(charts_dash: Dashboard, page: Any):
    """Each chart has a legend that hides a line on click, and a full-screen view left with Esc."""
    page.goto(f"{charts_dash.url}/#/p/charts/compare?runs={','.join(_twins(charts_dash))}")
    chart = _chart(page, "acc")
    items = chart.locator(".chart-legend li")
    assert items.count() == 3
    items.first.click()
    assert "off" in (chart.locator(".chart-legend li").first.get_attribute("class") or "")
    chart.locator(".full-btn").click()
    page.wait_for_function(
        "() => document.querySelector('figure.chart[data-key=\"acc\"]').dataset.full === '1'"
    )
    box = chart.bounding_box()
    assert box["width"] > 1200 and box["height"] > 780
    assert chart.locator("canvas").first.bounding_box()["height"] > 500
    page.keyboard.press("Escape")
    page.wait_for_function(
        "() => document.querySelector('figure.chart[data-key=\"acc\"]').dataset.full === '0'"
    )


def test_chart_settings_add_metrics_and_own_x(charts_dash: Dashboard, page: Any):
    """A chart can draw several metrics against its own x; the choice lives in the URL."""
    page.goto(f"{charts_dash.url}/#/p/charts/r/{_id(charts_dash, 'gappy')}")
    chart = _chart(page, "loss")
    chart.locator(".edit-btn").click()
    chart.locator(".edit-keys").select_option(["acc"])
    chart.locator(".edit-x").select_option("relative")
    chart.locator(".edit-apply").click()
    page.wait_for_function(
        "() => { const d = document.querySelector('figure.chart[data-key=\"loss\"]')?.dataset;"
        " return d && d.keys === 'loss,acc' && d.x === 'relative' && d.drawn; }"
    )
    chart = page.locator('figure.chart[data-key="loss"]')
    assert chart.locator(".chart-legend li").all_inner_texts()[1].startswith("acc")
    assert _titles(chart) == ["relative time (s)", "value"]
    assert "cv=" in page.url
    page.reload()
    page.wait_for_function(
        "() => document.querySelector('figure.chart[data-key=\"loss\"]')?.dataset.keys === 'loss,acc'"
    )


# --- compare ---------------------------------------------------------------------------------


def test_config_diff_shows_exactly_the_differing_keys(charts_dash: Dashboard, page: Any):
    """The config table lists lr and opt (which differ) and not layers or seed (which do not)."""
    page.goto(f"{charts_dash.url}/#/p/charts/compare?runs={','.join(_twins(charts_dash))}")
    table = page.locator("#config-diff")
    table.wait_for()
    assert table.get_attribute("data-keys") == "config.lr,config.opt"
    assert table.locator("tbody tr th").all_inner_texts() == ["lr", "opt"]
    with_gappy = [*_twins(charts_dash), _id(charts_dash, "gappy")]
    page.goto(f"{charts_dash.url}/#/p/charts/compare?runs={','.join(with_gappy)}")
    page.wait_for_selector("#config-diff")
    # gappy has no opt and no seed: a key some runs lack differs
    assert page.locator("#config-diff").get_attribute("data-keys") == (
        "config.lr,config.opt,config.seed"
    )


def test_parallel_coordinates_and_scatter_with_trend(
    charts_dash: Dashboard, page: Any, shots: Path
):
    """Parallel coordinates draw a line per run; the scatter's trend is the least-squares fit."""
    twins = _twins(charts_dash)
    page.goto(f"{charts_dash.url}/#/p/charts/compare?runs={','.join(twins)}")
    pc = page.locator("#parcoords")
    pc.wait_for()
    assert pc.get_attribute("data-axes") == "config.lr,config.opt,summary.loss"
    assert pc.locator(".pc-line polyline").count() == 3
    page.select_option("#scatter-x", "config.lr")
    page.select_option("#scatter-y", "summary.loss")
    assert page.locator("#scatter circle[data-run]").count() == 3
    fit = page.locator("#scatter-fit")
    runs = {r["id"]: r for r in _runs(charts_dash, "charts")}
    xs = [runs[i]["config"]["lr"] for i in twins]
    ys = [runs[i]["summary"]["loss"] for i in twins]
    mx, my = sum(xs) / 3, sum(ys) / 3
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    assert float(fit.get_attribute("data-slope") or "nan") == pytest.approx(slope, rel=1e-9)
    page.check("#scatter-logx")
    assert "config.lr (log)" in page.locator("#scatter").inner_html()
    save_shot(page, shots, "compare-analysis")


def test_media_side_by_side_with_zoom(charts_dash: Dashboard, page: Any):
    """An image key on the compare page shows one column per run; clicking an image zooms it."""
    twins = _twins(charts_dash)
    page.goto(f"{charts_dash.url}/#/p/charts/compare?runs={','.join(twins)}")
    cell = page.locator('[data-cell="predictions/img"]')
    cell.scroll_into_view_if_needed()
    cols = cell.locator(".media-compare-col")
    cols.first.wait_for()
    assert cols.count() == 3
    cols.first.locator("img.media-img").click()
    box = page.locator("#lightbox")
    box.wait_for()
    page.wait_for_function("() => +document.querySelector('#lightbox').dataset.scale > 1")
    before = float(box.get_attribute("data-scale") or "0")
    page.click("#zoom-out")
    assert float(box.get_attribute("data-scale") or "0") == pytest.approx(before / 1.5)
    page.click("#zoom-in")
    page.click("#zoom-in")
    assert float(box.get_attribute("data-scale") or "0") == pytest.approx(before * 1.5)
    page.keyboard.press("Escape")
    page.wait_for_selector("#lightbox", state="detached")
