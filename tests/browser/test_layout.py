"""Layout of the dashboard's headline pages in Chromium at 1400x900 (and 1920x1080), on the
demo's runs (``examples/train.py``, run twice so each learning rate is a group of two):
the tests measure where things are drawn, not only what the page holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ROOT, STATIC, Dashboard, _missing, save_shot, start_dashboard

DEMO = ROOT / "examples" / "train.py"
MLP_RUNS = 6  # two demo runs of three learning rates
# a project whose table is wider than the screen and whose config holds a long list
WIDE = """
import wisp
cfg = {f"param_{i:02d}": i * 1.5 for i in range(30)}
cfg["layers"] = list(range(400))
run = wisp.init(project="wide", name="wide-run", config=cfg)
wisp.log({"loss": 1.0}, step=0)
run.finish()
"""
SCALAR_SECTIONS = ["charts", "train", "val"]
MEDIA_SECTIONS = ["media", "plots", "predictions", "weights"]


def _get(d: Dashboard, path: str) -> Any:
    with urllib.request.urlopen(f"{d.url}/api/v1{path}", timeout=10) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("demo-work")
    env = {**os.environ, "WISP_DIR": str(work)}
    for _ in range(2):
        subprocess.run([sys.executable, str(DEMO)], cwd=work, env=env, check=True, timeout=300)
    subprocess.run([sys.executable, "-c", WIDE], cwd=work, env=env, check=True, timeout=120)
    d = start_dashboard(work, tmp_path_factory.mktemp("demo-data"))
    deadline = time.monotonic() + 90
    while True:  # until wisp ui has imported every run with its media
        runs = _get(d, "/projects/spiral/runs?limit=100")["runs"]
        mlp = [r for r in runs if r["name"].startswith("mlp-")]
        done = len(mlp) == MLP_RUNS and all(
            len(_get(d, f"/runs/{r['id']}").get("media_keys") or {}) >= 11 for r in mlp
        )
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert done, "wisp ui did not import the demo's runs within 90 s"
    yield d
    d.stop.set()
    d.thread.join(30)


@contextmanager
def _viewport(browser: Any, width: int = 1400, height: int = 900, scheme: str = "light"):
    ctx = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    pg = ctx.new_page()
    pg.set_default_timeout(20_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield pg
    finally:
        ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def _run_id(d: Dashboard, name: str) -> str:
    runs = _get(d, "/projects/spiral/runs?limit=100")["runs"]
    return next(r["id"] for r in runs if r["name"] == name)


def _mlp_ids(d: Dashboard) -> list[str]:
    runs = _get(d, "/projects/spiral/runs?limit=100")["runs"]
    return [r["id"] for r in runs if r["name"].startswith("mlp-")][:3]


def _scroll_through(pg: Any) -> None:
    """Scroll to the bottom in screenfuls (lazy cells load on the way), then back up."""
    for _ in range(40):
        at_end = pg.evaluate(
            "() => { window.scrollBy(0, innerHeight * 0.8);"
            " return innerHeight + scrollY >= document.documentElement.scrollHeight - 2; }"
        )
        pg.wait_for_timeout(150)
        if at_end:
            break


NO_SIDEWAYS = """() => {
  const W = document.documentElement.clientWidth;
  const out = [];
  for (const e of document.querySelectorAll('#app *, header#top *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height || !e.checkVisibility()) continue;
    let clipped = false;  // inside a scroller or a clipping box: its own business
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o !== 'visible') { clipped = true; break; }
    }
    if (!clipped && (r.right > W + 1 || r.left < -1))
      out.push(`${e.tagName}.${e.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
  return {W, scroll: document.documentElement.scrollWidth, out: out.slice(0, 8)};
}"""


def test_grouped_runs_table_puts_each_mean_under_its_header(demo: Dashboard, browser: Any):
    """Grouped by config.lr, each group row's aggregate cell spans exactly its column's header
    (was: one column to the right, drifting 8 px per column)."""
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/p/spiral?group=config.lr")
        pg.wait_for_selector(".group-row [data-agg]")
        cells = pg.eval_on_selector_all(
            ".group-row [data-agg]",
            """els => els.map(e => { const r = e.getBoundingClientRect();
                 const h = document.querySelector(`.thead [data-col="${e.dataset.agg}"]`)
                   .closest('.th-wrap').getBoundingClientRect();
                 return {col: e.dataset.agg, l: r.left, r: r.right, hl: h.left, hr: h.right}; })""",
        )
        assert {c["col"] for c in cells} >= {"config.lr", "config.hidden", "duration"}
        for c in cells:
            assert c["l"] == pytest.approx(c["hl"], abs=1), c
            assert c["r"] == pytest.approx(c["hr"], abs=1), c
        counts = pg.eval_on_selector_all(
            ".group-row .group-name", "els => els.map(e => e.innerText)"
        )
        assert any(t.endswith("2 runs") for t in counts), counts


def test_grouped_workspace_leads_with_the_training_curves(
    demo: Dashboard, browser: Any, shots: Path
):
    """The default grouped workspace shows the scalar keys the runs share, ungrouped first then
    by prefix (train/loss and val/acc among them, no media key), never a "no data" panel for a
    logged key, and a legend that counts each group's runs as the table does."""
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/p/spiral/w?group=config.lr")
        pg.wait_for_selector("#ws-grid [data-panel][data-drawn]")
        titles = pg.eval_on_selector_all(
            "#ws-grid .panel-title", "els => els.map(e => e.textContent)"
        )
        assert {"train/loss", "val/acc", "train/acc", "val/loss"} <= set(titles), titles
        assert not [t for t in titles if t.split("/")[0] in MEDIA_SECTIONS], titles
        sections = pg.eval_on_selector_all(
            "#ws-grid .ws-section", "els => els.map(e => e.dataset.section)"
        )
        assert sections == ["", "train", "val"]
        legend = pg.eval_on_selector_all(
            "#ws-legend li",
            "els => els.map(e => [e.innerText, e.querySelector('[data-count]').dataset.count])",
        )
        by_label = {t.split(" (")[0]: (t, n) for t, n in legend}
        for lr in ("0.1", "0.5", "1"):
            text, n = by_label[f"config.lr = {lr}"]
            assert n == "2" and text.endswith("(2 runs)"), legend
        first = pg.locator('#ws-grid [data-panel]:has(.panel-title:text-is("train/loss"))')
        assert first.bounding_box()["y"] < 900, "train/loss is not on the first screen"
        save_shot(pg, shots, "demo-workspace-grouped")
        _scroll_through(pg)
        pg.wait_for_function(
            "() => [...document.querySelectorAll('#ws-grid [data-panel]')].every(p => p.dataset.drawn)"
        )
        empty = pg.eval_on_selector_all(
            "#ws-grid [data-panel]",
            "els => els.filter(e => /no data/.test(e.querySelector('.panel-head').innerText))"
            ".map(e => e.querySelector('.panel-title').textContent)",
        )
        assert empty == []


def test_run_page_leads_with_its_scalar_metrics(demo: Dashboard, browser: Any, shots: Path):
    """At 1400x900 the run page's first screen holds its first scalar charts (train/loss among
    them); sections go ungrouped scalars, then by prefix, then media and plots."""
    rid = _run_id(demo, "mlp-lr0.5-h16")
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/p/spiral/r/{rid}")
        pg.wait_for_selector('.cell[data-cell="train/loss"] .uplot')
        order = pg.eval_on_selector_all(".section", "els => els.map(e => e.dataset.section)")
        assert order[:3] == SCALAR_SECTIONS, order
        assert sorted(order[3:]) == MEDIA_SECTIONS, order
        for key in ("epoch", "train/loss"):
            box = pg.locator(f'.cell[data-cell="{key}"]').bounding_box()
            assert box["y"] + box["height"] <= 900, (key, box)
        save_shot(pg, shots, "demo-run-page")


def _media_layout(pg: Any) -> dict[str, Any]:
    """Each media cell: its card inside the cell, nothing of it overlapping another cell."""
    return pg.evaluate(
        """() => {
      const cells = [...document.querySelectorAll('.cell.media-wrap')];
      const bad = [];
      const rects = cells.map(c => c.querySelector('figure.media-cell')?.getBoundingClientRect());
      cells.forEach((c, i) => {
        const cr = c.getBoundingClientRect(), f = rects[i];
        if (!f) { bad.push(`${c.dataset.cell}: not drawn`); return; }
        if (f.bottom > cr.bottom + 1 || f.right > cr.right + 1)
          bad.push(`${c.dataset.cell}: card ${Math.round(f.bottom)} below cell ${Math.round(cr.bottom)}`);
        const bg = getComputedStyle(c).backgroundColor;
        if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') bad.push(`${c.dataset.cell}: cell painted ${bg}`);
        rects.forEach((g, j) => {
          if (j === i || !g) return;
          if (f.left < g.right - 1 && g.left < f.right - 1 && f.top < g.bottom - 1 && g.top < f.bottom - 1)
            bad.push(`${c.dataset.cell} overlaps ${cells[j].dataset.cell}`);
        });
        const fig = c.querySelector('figure.media-cell');
        // sideways, each element stays inside the nearest box that clips it (or the card)
        for (const e of fig.querySelectorAll('*')) {
          let box = f;
          for (let p = e.parentElement; p && p !== fig; p = p.parentElement)
            if (getComputedStyle(p).overflowX !== 'visible') { box = p.getBoundingClientRect(); break; }
          const r = e.getBoundingClientRect();
          if (r.width && (r.right > box.right + 1 || r.left < box.left - 1)) {
            const scroller = box !== f;
            if (!scroller) { bad.push(`${c.dataset.cell}: ${e.tagName} sticks out`); break; }
          }
        }
      });
      // on compare, each run's column keeps its content (or scrolls it): none spills into the next
      for (const col of document.querySelectorAll('.media-compare-col')) {
        if (getComputedStyle(col).overflowX !== 'visible') continue;
        const cr = col.getBoundingClientRect();
        for (const e of col.querySelectorAll('*'))
          if (e.getBoundingClientRect().right > cr.right + 1) {
            bad.push(`${col.closest('.cell').dataset.cell}: ${e.tagName} spills out of its run's column`);
            break;
          }
      }
      const html = [...document.querySelectorAll('.cell.media-wrap iframe.media-html')]
        .map(f => f.getBoundingClientRect().height);
      return {n: cells.length, bad, html};
    }"""
    )


def test_media_cells_keep_to_their_cards(demo: Dashboard, browser: Any):
    """On the run page and on compare (three runs side by side) every media card lies inside
    its cell, paints nothing outside it and overlaps no other card: no black block under a
    video, no report clipped under the next row, no 360 px empty report frame."""
    rid = _run_id(demo, "mlp-lr0.5-h16")
    ids = ",".join(_mlp_ids(demo))
    for url in (f"#/p/spiral/r/{rid}", f"#/p/spiral/compare?runs={ids}"):
        with _viewport(browser) as pg:
            pg.goto(f"{demo.url}/{url}")
            pg.wait_for_selector(".cell.media-wrap")
            _scroll_through(pg)
            pg.wait_for_function(
                "() => [...document.querySelectorAll('.cell.media-wrap')]"
                ".every(c => c.querySelector('figure.media-cell[data-drawn]'))"
            )
            got = _media_layout(pg)
            assert got["n"] == 11 and got["bad"] == [], (url, got)
            assert got["html"] and max(got["html"]) <= 260, got["html"]


def test_plot_titles_and_legends_read_right(demo: Dashboard, browser: Any):
    """The confusion matrix is titled "Confusion Matrix"; PR/ROC legends name the classes
    without the x label or empty ':' values until the cursor is on the chart."""
    rid = _run_id(demo, "mlp-lr0.5-h16")
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/p/spiral/r/{rid}?q=plots")
        pg.wait_for_selector('.cell[data-cell="plots/pr"] .u-legend')
        title = pg.locator('.cell[data-cell="plots/confusion"] .chart-title').inner_text()
        assert title == "Confusion Matrix"
        legend = pg.locator('.cell[data-cell="plots/pr"] .u-legend').inner_text()
        assert "inner" in legend and "outer" in legend
        assert ":" not in legend and "Recall" not in legend, legend


def test_parallel_coordinates_labels_stay_in_the_box(demo: Dashboard, browser: Any):
    """Every axis title and tick label of compare's parallel coordinates lies inside its SVG."""
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/p/spiral/compare?runs={','.join(_mlp_ids(demo))}")
        pg.wait_for_selector("#parcoords text")
        out = pg.evaluate(
            """() => { const s = document.querySelector('#parcoords').getBoundingClientRect();
              return [...document.querySelectorAll('#parcoords text')].map(t => {
                const r = t.getBoundingClientRect();
                return [t.textContent, r.left >= s.left - 0.5 && r.right <= s.right + 0.5
                        && r.top >= s.top - 0.5 && r.bottom <= s.bottom + 0.5]; }); }"""
        )
        assert len(out) > 6 and [t for t, inside in out if not inside] == []


@pytest.mark.parametrize("size", [(1400, 900), (1920, 1080)])
def test_no_page_runs_off_the_right_edge(demo: Dashboard, browser: Any, size: tuple[int, int]):
    """Projects, runs (plain, grouped, wide), workspace, run page tabs, compare, artifacts and
    sweeps: no element outside a scroller crosses the viewport's right edge (the overview's
    long list value wraps)."""
    rid = _run_id(demo, "mlp-lr0.5-h16")
    ids = ",".join(_mlp_ids(demo))
    wide = _get(demo, "/projects/wide/runs")["runs"][0]["id"]
    routes = [
        "#/",
        "#/p/spiral",
        "#/p/spiral?group=config.lr",
        "#/p/wide?cols=" + ",".join(f"config.param_{i:02d}" for i in range(20)),
        "#/p/spiral/w?group=config.lr",
        f"#/p/spiral/r/{rid}",
        f"#/p/spiral/r/{rid}?tab=overview",
        f"#/p/spiral/r/{rid}?tab=media",
        f"#/p/wide/r/{wide}?tab=overview",
        f"#/p/spiral/compare?runs={ids}",
        "#/p/spiral/artifacts",
        "#/sweeps",
    ]
    with _viewport(browser, *size) as pg:
        for route in routes:
            pg.goto(f"{demo.url}/{route}")
            pg.wait_for_function("() => !document.querySelector('#app .loading')")
            pg.wait_for_timeout(600)
            got = pg.evaluate(NO_SIDEWAYS)
            assert got["out"] == [] and got["scroll"] <= got["W"], (route, got)


def test_wide_runs_table_says_it_scrolls(demo: Dashboard, browser: Any):
    """A table wider than the screen shades its right edge until scrolled to the end."""
    with _viewport(browser) as pg:
        cols = ",".join(["name", *(f"config.param_{i:02d}" for i in range(20))])
        pg.goto(f"{demo.url}/#/p/wide?cols={cols}")
        pg.wait_for_selector("#runs-wrap.clipped")
        pg.wait_for_function(
            "() => getComputedStyle(document.querySelector('#runs-wrap .more-right')).opacity === '1'"
        )
        pg.evaluate(
            "() => { const s = document.querySelector('#runs-scroller'); s.scrollLeft = s.scrollWidth; }"
        )
        pg.wait_for_selector("#runs-wrap:not(.clipped)")


def test_keyboard_slash_arrows_and_escape(demo: Dashboard, browser: Any):
    """'/' focuses the page's filter (runs table, workspace), ArrowDown goes from the filter
    into the runs table and on down, Escape leaves a full-screen chart wherever focus is."""
    rid = _run_id(demo, "mlp-lr0.5-h16")
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/p/spiral")
        pg.wait_for_selector(".tr[data-run]")
        pg.locator("body").press("/")
        assert pg.evaluate("document.activeElement.id") == "filter"
        pg.keyboard.press("ArrowDown")
        pg.keyboard.press("ArrowDown")
        assert pg.evaluate("document.activeElement.dataset.idx") == "1"
        pg.goto(f"{demo.url}/#/p/spiral/w")
        pg.wait_for_selector("#ws-grid [data-panel]")
        pg.locator("body").press("/")
        assert pg.evaluate("document.activeElement.id") == "ws-filter"
        pg.goto(f"{demo.url}/#/p/spiral/r/{rid}")
        cell = pg.locator('.cell[data-cell="train/loss"]')
        cell.locator(".uplot").wait_for()
        cell.locator("button.full-btn").click()
        assert cell.locator(".chart").get_attribute("data-full") == "1"
        pg.evaluate("() => document.activeElement.blur()")  # focus leaves the chart
        assert pg.evaluate("document.activeElement === document.body")
        pg.keyboard.press("Escape")
        assert cell.locator(".chart").get_attribute("data-full") == "0"


def test_header_names_each_place_once(demo: Dashboard, browser: Any):
    """The header's trail on the sweeps page reads "/ sweeps" once (was "sweeps sweeps")."""
    with _viewport(browser) as pg:
        pg.goto(f"{demo.url}/#/sweeps")
        pg.wait_for_function("() => !document.querySelector('#app .loading')")
        text = " ".join(pg.locator("header#top").inner_text().lower().split())
        assert "sweeps sweeps" not in text and text.count("sweeps") == 2, text


def test_both_themes_follow_the_system(demo: Dashboard, browser: Any, shots: Path):
    """prefers-color-scheme: dark gives the dark palette (dark page, light text); light the
    light one; the screenshots of both go to the README."""
    rid = _run_id(demo, "mlp-lr0.5-h16")
    seen = {}
    for scheme in ("light", "dark"):
        with _viewport(browser, scheme=scheme) as pg:
            pg.goto(f"{demo.url}/#/p/spiral/w?group=config.lr")
            pg.wait_for_selector("#ws-grid [data-panel][data-drawn]")
            seen[scheme] = pg.evaluate(
                "() => { const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]; }"
            )
            if scheme == "dark":
                save_shot(pg, shots, "demo-workspace-dark")
                pg.goto(f"{demo.url}/#/p/spiral/r/{rid}")
                pg.wait_for_selector('.cell[data-cell="train/loss"] .uplot')
                save_shot(pg, shots, "demo-run-page-dark")

    def lum(css: str) -> float:
        r, g, b = (int(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    assert lum(seen["light"][0]) > 200 and lum(seen["light"][1]) < 80
    assert lum(seen["dark"][0]) < 40 and lum(seen["dark"][1]) > 180
