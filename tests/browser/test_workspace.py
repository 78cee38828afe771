"""A 20-run sweep grouped by learning rate: runs-table aggregates, mean ± band charts, and a
saved workspace restored from its URL in a fresh browser context."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, save_shot, start_dashboard

LRS = (0.1, 0.03, 0.01, 0.001)
STEPS = 300


def loss(i: int, lr: float, step: int) -> float:
    """The loss run ``i`` logs at ``step`` (the SDK subprocess and the test share it)."""
    return 1.0 / (1 + step * lr) + 0.02 * ((i * 7919 + step * 104729) % 97) / 97


SCRIPT = f"""
import wisp
LRS = {LRS!r}
def loss(i, lr, step):
    return 1.0 / (1 + step * lr) + 0.02 * ((i * 7919 + step * 104729) % 97) / 97
for i in range(20):
    lr = LRS[i % 4]
    run = wisp.init(project="sweep", name=f"trial-{{i:02d}}", config={{"lr": lr, "opt": {{"beta": 0.9}}}},
                    settings={{"system_metrics": False, "console": "off", "git": False}})
    for step in range({STEPS}):
        wisp.log({{"loss": loss(i, lr, step), "acc": 1 - loss(i, lr, step) / 2}}, step=step)
    run.finish()
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("sweep")
    env = {**os.environ, "WISP_DIR": str(work)}
    subprocess.run([sys.executable, "-c", SCRIPT], cwd=work, env=env, check=True, timeout=300)
    d = start_dashboard(work, tmp_path_factory.mktemp("data"))
    deadline = 120
    for _ in range(deadline * 4):
        with urllib.request.urlopen(f"{d.url}/api/v1/projects/sweep/runs?limit=100") as r:
            runs = json.load(r)["runs"]
        if len(runs) == 20 and all(x["state"] == "finished" for x in runs):
            break
        import time

        time.sleep(0.25)
    yield d
    d.stop.set()
    d.thread.join(30)


def _expected_means() -> dict[float, dict[int, float]]:
    return {
        lr: {
            s: statistics.fmean(loss(i, lr, s) for i in range(20) if LRS[i % 4] == lr)
            for s in range(STEPS)
        }
        for lr in LRS
    }


def test_runs_table_groups_by_config_key_with_aggregates(sweep: Dashboard, page: Any) -> None:
    """Grouped by config.lr, each group row's summary.loss mean is the mean of its runs'."""
    page.goto(f"{sweep.url}/#/p/sweep?group=config.lr&cols=config.lr,summary.loss")
    page.wait_for_function("() => document.querySelector('#run-count').textContent === '20 runs'")
    rows = page.locator("#runs-scroller .group-row")
    assert rows.count() == 4
    for lr in LRS:
        cell = page.locator(f'.group-row[data-group="{lr}"] [data-agg="summary.loss"]')
        want = [loss(i, lr, STEPS - 1) for i in range(20) if LRS[i % 4] == lr]
        assert float(cell.get_attribute("data-mean")) == pytest.approx(statistics.fmean(want))
        assert float(cell.get_attribute("data-min")) == pytest.approx(min(want))
        assert cell.get_attribute("data-n") == "5"
    # the header reads "s. loss" in full, and its right edge resizes the column
    head = page.locator('.th[data-col="summary.loss"]')
    before = head.bounding_box()["width"]
    grip = page.locator('[data-resize="summary.loss"]').bounding_box()
    page.mouse.move(grip["x"] + 3, grip["y"] + 5)
    page.mouse.down()
    page.mouse.move(grip["x"] + 123, grip["y"] + 5, steps=5)
    page.mouse.up()
    page.wait_for_function(
        "w => document.querySelector('.th[data-col=\"summary.loss\"]')"
        ".getBoundingClientRect().width > w + 100",
        arg=before,
    )


def test_unknown_project_says_so(sweep: Dashboard, page: Any) -> None:
    """A project with no runs shows a message instead of an empty table."""
    page.goto(f"{sweep.url}/#/p/no-such-project")
    msg = page.locator("#runs-empty")
    msg.wait_for()
    assert "no-such-project" in msg.inner_text() and "no runs" in msg.inner_text()


DRAWN = """([id, label]) => {
  const p = window.__wisp.panels.get(id); const d = p && p.drawn.get(label);
  return d ? {x: d.x, y: d.y, lo: d.lo, hi: d.hi} : null; }"""


def _panel_ids(page: Any) -> list[str]:
    return list(
        page.eval_on_selector_all("#ws-grid [data-panel]", "els => els.map(e => e.dataset.panel)")
    )


def test_grouped_workspace_saved_and_restored(
    sweep: Dashboard, page: Any, browser: Any, shots: Path
) -> None:
    """Group the sweep by lr: mean ± band per group equals the logged data; saved, the view
    comes back from its URL in a fresh browser context."""
    page.goto(f"{sweep.url}/#/p/sweep")
    page.wait_for_function("() => document.querySelector('#run-count').textContent === '20 runs'")
    page.select_option("#group-by", "config.lr")
    page.click("#open-workspace")
    page.wait_for_selector("#ws-grid [data-panel][data-drawn]")
    assert page.locator("#ws-group").input_value() == "config.lr"
    assert page.locator("#ws-legend li").count() == 4
    ids = _panel_ids(page)
    loss_panel = next(
        i for i in ids if page.locator(f'[data-panel="{i}"] .panel-title').inner_text() == "loss"
    )
    want = _expected_means()
    for lr in LRS:
        d = page.evaluate(DRAWN, [loss_panel, str(lr)])
        assert d["x"] == list(range(STEPS))
        assert d["y"] == pytest.approx([want[lr][s] for s in range(STEPS)], rel=1e-9)
        vals = [[loss(i, lr, s) for i in range(20) if LRS[i % 4] == lr] for s in range(STEPS)]
        assert d["lo"] == pytest.approx([min(v) for v in vals])
        assert d["hi"] == pytest.approx([max(v) for v in vals])
    # a ±std band instead, a panel configured (log y, y range), another added, moved, removed
    loads = page.locator("#ws-grid").get_attribute("data-loaded")
    page.select_option("#ws-band", "std")  # fetches the mean and std instead
    page.wait_for_function(
        "n => document.querySelector('#ws-grid').dataset.loaded !== n", arg=loads
    )
    d = page.evaluate(DRAWN, [loss_panel, "0.01"])
    sd = [statistics.pstdev(loss(i, 0.01, s) for i in range(20) if i % 4 == 2) for s in range(3)]
    assert d["hi"][:3] == pytest.approx([want[0.01][s] + sd[s] for s in range(3)])
    cfg = page.locator(f'[data-panel="{loss_panel}"]')
    cfg.locator("button.configure").click()
    cfg.locator('input[name="log_y"]').check()
    cfg.locator('input[name="y_min"]').fill("0.05")
    cfg.locator('input[name="y_max"]').fill("2")
    cfg.locator("button.apply").click()
    page.wait_for_function(
        "id => document.querySelector(`[data-panel=\"${id}\"]`).dataset.scaleYmax === '2'",
        arg=loss_panel,
    )
    page.click("#ws-add")
    page.wait_for_function(
        f"() => document.querySelectorAll('#ws-grid [data-panel]').length == {len(ids) + 1}"
    )
    cfg.locator("button.move-right").click()
    order = _panel_ids(page)
    assert order.index(loss_panel) == ids.index(loss_panel) + 1
    added = next(i for i in order if i not in ids)
    page.locator(f'[data-panel="{added}"] button.remove').click()
    order = _panel_ids(page)
    assert added not in order and len(order) == len(ids)
    page.fill("#ws-name", "lr sweep")
    page.click("#ws-save")
    page.wait_for_function("() => !!document.querySelector('#ws-status').dataset.saved")
    url = page.url
    assert "/w/" in url
    save_shot(page, shots, "workspace-grouped")

    fresh = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        pg = fresh.new_page()
        pg.goto(url)
        pg.wait_for_function(
            f"() => document.querySelectorAll('#ws-grid [data-panel][data-drawn]').length == {len(order)}"
        )
        assert _panel_ids(pg) == order
        assert pg.locator("#ws-name").input_value() == "lr sweep"
        assert pg.locator("#ws-group").input_value() == "config.lr"
        assert pg.locator("#ws-band").input_value() == "std"
        assert pg.locator(f'[data-panel="{loss_panel}"]').get_attribute("data-scale-ymax") == "2"
        d = pg.evaluate(DRAWN, [loss_panel, "0.1"])
        assert d["y"] == pytest.approx([want[0.1][s] for s in range(STEPS)], rel=1e-9)
    finally:
        fresh.close()


IN_VIEW_DRAWN = """n => {
  const ps = [...document.querySelectorAll('#ws-grid [data-panel]')];
  const seen = ps.filter(p => { const r = p.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight; });
  return ps.length === n && seen.length > 0 && seen.every(p => p.dataset.drawn); }"""


def test_many_panels_draw_in_view_from_one_batch(sweep: Dashboard, page: Any) -> None:
    """Of 40 saved panels only those in or near the viewport are drawn, from one grouped
    request; a panel scrolled to later is drawn from the keys already fetched, and right."""
    spec = {
        "panels": [{"id": f"m{k}", "keys": ["loss" if k % 2 else "acc"]} for k in range(40)],
        "group_by": ["config.lr"],
    }
    req = urllib.request.Request(
        f"{sweep.url}/api/v1/projects/sweep/workspaces",
        data=json.dumps({"name": "many", "spec": spec}).encode(),
        headers={"Content-Type": "application/json", "X-CSRF-Token": "t"},
        method="POST",
    )
    with urllib.request.urlopen(req) as r:
        wid = json.load(r)["id"]
    grouped: list[str] = []
    page.on("request", lambda r: grouped.append(r.url) if "/series/grouped" in r.url else None)
    page.goto(f"{sweep.url}/#/p/sweep/w/{wid}")
    page.wait_for_function(IN_VIEW_DRAWN, arg=40)
    drawn = page.locator("#ws-grid [data-panel][data-drawn]").count()
    assert 0 < drawn < 40
    assert len(grouped) == 1
    page.locator('[data-panel="m39"]').scroll_into_view_if_needed()
    page.wait_for_selector('[data-panel="m39"][data-drawn]')
    assert len(grouped) == 1  # loss and acc came in the first batch
    want = _expected_means()
    d = page.evaluate(DRAWN, ["m39", "0.03"])
    assert d["y"] == pytest.approx([want[0.03][s] for s in range(STEPS)], rel=1e-9)


def test_runs_table_sorts_in_the_page_stably(sweep: Dashboard, page: Any) -> None:
    """Sorted in the page (every run loaded): by a number, by name, and by a column of ties,
    which keep the order they had (a stable sort)."""
    page.goto(f"{sweep.url}/#/p/sweep?cols=config.lr,summary.loss")
    page.wait_for_function("() => document.querySelector('#run-count').textContent === '20 runs'")
    final = {f"trial-{i:02d}": loss(i, LRS[i % 4], STEPS - 1) for i in range(20)}
    lr = {f"trial-{i:02d}": LRS[i % 4] for i in range(20)}

    def click(col: str, order: str) -> list[str]:
        page.locator(f'.th[data-col="{col}"]').click()
        page.wait_for_selector(f'.th[data-col="{col}"][aria-sort="{order}"]')
        return list(page.locator("#runs-scroller .tr[data-run] .run-name").all_inner_texts())

    got = click("summary.loss", "descending")
    assert got == sorted(final, key=lambda n: -final[n])
    got = click("name", "ascending")
    assert got == sorted(final)
    got = click("config.lr", "descending")
    assert got == sorted(sorted(final), key=lambda n: -lr[n])  # ties in name order
    got = click("config.lr", "ascending")
    assert got == sorted(sorted(final), key=lambda n: lr[n])
