"""The dashboard in a real browser against the real server filled by the real SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests._procs import stop
from tests.browser.conftest import SPIKE, SPIKE_STEP, STEPS, Dashboard, save_shot


def _runs(d: Dashboard) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{d.url}/api/v1/projects/browser/runs", timeout=10) as r:
        return list(json.load(r)["runs"])


def _run_id(d: Dashboard, name: str) -> str:
    return next(r["id"] for r in _runs(d) if r["name"] == name)


def _names(page: Any) -> list[str]:
    return list(page.locator("#runs-scroller .tr .run-name").all_inner_texts())


def _until(page: Any, key: str, expr: str, arg: Any = None, timeout: float = 15_000) -> None:
    """Wait until ``expr`` (JS, with ``d`` = the chart's dataset, ``a`` = arg) holds."""
    js = (
        '([k, a]) => { const el = document.querySelector(`figure.chart[data-key="${k}"]`);'
        f" const d = el && el.dataset; return !!d && ({expr}); }}"
    )
    page.wait_for_function(js, arg=[key, arg], timeout=timeout)


def _chart(page: Any, key: str) -> Any:
    page.locator(f'[data-cell="{key}"]').scroll_into_view_if_needed()
    chart = page.locator(f'figure.chart[data-key="{key}"]')
    chart.wait_for()
    _until(page, key, "!!d.drawn")
    return chart


def test_projects_and_runs_table_list_logged_runs(dashboard: Dashboard, page: Any, shots: Path):
    """The projects page links the project and its runs table lists every logged run."""
    page.goto(dashboard.url + "/#/")
    page.get_by_role("link", name="browser").click()
    page.wait_for_selector("#runs-scroller .tr")
    assert sorted(_names(page)) == ["run-lr0.001", "run-lr0.01", "run-lr0.1"]
    assert page.locator("#run-count").inner_text() == "3 runs"
    assert page.locator(".tr .state-finished").count() == 3
    save_shot(page, shots, "runs-table")


def test_landing_page_names_the_folders_wisp_ui_follows(dashboard: Dashboard, page: Any):
    """The projects page says, on its first screen, which folders `wisp ui` imports runs from."""
    page.goto(dashboard.url + "/#/")
    note = page.locator("#ui-folders")
    note.wait_for()
    assert str(dashboard.workdir) in note.inner_text()
    assert str(dashboard.workdir) in note.get_attribute("data-folders").split("\n")
    box = note.bounding_box()
    assert box is not None and box["y"] + box["height"] <= page.viewport_size["height"]


def test_wisp_ui_in_an_empty_folder_says_which_folder_it_follows(tmp_path: Path, page: Any):
    """`wisp ui DIR` on a folder with no runs shows "No projects yet" and names that folder."""
    from tests.browser.conftest import start_dashboard

    empty = tmp_path / "empty"
    empty.mkdir()
    d = start_dashboard(empty, tmp_path / "data", only=True)
    try:
        page.goto(d.url + "/#/")
        page.wait_for_selector("#projects-empty")
        assert page.locator("#ui-folders").get_attribute("data-folders") == str(empty)
        assert page.locator("#ui-folders").is_visible()
    finally:
        d.stop.set()
        d.thread.join(30)


def test_run_page_lists_the_config_in_the_order_it_was_logged(dashboard: Dashboard, page: Any):
    """The run page's config table keeps the logged key order (lr before layers), not a-z."""
    page.goto(dashboard.url + f"/#/p/browser/r/{_run_id(dashboard, 'run-lr0.1')}?tab=overview")
    page.wait_for_selector("#config th")
    assert page.locator("#config th").all_inner_texts() == ["lr", "layers"]


def test_runs_table_lists_config_columns_in_the_order_they_were_logged(
    dashboard: Dashboard, page: Any
):
    """The runs table's default config columns keep the logged key order (lr before layers),
    as the run page does, not a-z."""
    page.goto(dashboard.url + "/#/p/browser")
    page.wait_for_selector("#runs-scroller .tr")
    cols = page.locator("#runs-scroller .th[data-col]").evaluate_all(
        "els => els.map(e => e.dataset.col)"
    )
    assert [c for c in cols if c.startswith("config.")] == ["config.lr", "config.layers"]


def test_sorting_by_config_column_orders_rows(dashboard: Dashboard, page: Any):
    """Clicking a config column header sorts ascending, clicking again descending."""
    page.goto(dashboard.url + "/#/p/browser?cols=config.lr,config.layers")
    page.wait_for_selector("#runs-scroller .tr")
    header = page.locator('.th[data-col="config.lr"]')
    header.click()
    page.wait_for_selector('.th[data-col="config.lr"][aria-sort$="ending"]')
    first = _names(page)
    header.click()
    second = _names(page)
    assert {tuple(first), tuple(second)} == {
        ("run-lr0.001", "run-lr0.01", "run-lr0.1"),
        ("run-lr0.1", "run-lr0.01", "run-lr0.001"),
    }
    assert "sort=config.lr" in page.url


def test_filter_expression_is_applied_and_kept_in_url(dashboard: Dashboard, page: Any):
    """A filter expression narrows the rows, lands in the URL and survives a reload."""
    page.goto(dashboard.url + "/#/p/browser")
    page.wait_for_selector("#runs-scroller .tr")
    page.fill("#filter", 'config.lr < 0.05 and tags contains "sweep"')
    page.press("#filter", "Enter")
    page.wait_for_function("() => document.querySelector('#run-count').textContent === '2 runs'")
    assert sorted(_names(page)) == ["run-lr0.001", "run-lr0.01"]
    page.reload()
    page.wait_for_function("() => document.querySelector('#run-count').textContent === '2 runs'")
    assert page.input_value("#filter") == 'config.lr < 0.05 and tags contains "sweep"'


def test_bad_filter_shows_the_servers_message(dashboard: Dashboard, page: Any):
    """An invalid filter shows the server's error instead of breaking the table."""
    page.goto(dashboard.url + "/#/p/browser")
    page.wait_for_selector("#runs-scroller .tr")
    page.fill("#filter", "config.lr <<< nonsense (")
    page.press("#filter", "Enter")
    err = page.locator("#filter-error")
    err.wait_for()
    assert err.inner_text().strip() != ""


# expressions the page's own evaluator decides (web/src/filter.ts, over the server's parse),
# and ones it leaves to the server
CLIENT_FILTERS = [
    "config.lr < 0.01",
    "config.lr <= 0.01 and state = finished",
    'config.layers >= 3 or tags contains "baseline"',
    "not (config.lr < 0.01)",
    "summary.train/loss > 0.01",
    'name contains "lr0.0"',
    "config.lr = 0.01 or config.lr == 0.1",
    'tags contains "sweep" and not config.layers = 3',
    "group = g1 and config.missing exists",
    "config.lr exists and state != running",
    "config.lr = null or config.nope != null",
    "summary.epoch = 19 and (group = g1 or group = g2)",
    'config.lr > 0.05 OR name = "run-lr0.001"',
]
SERVER_FILTERS = ['name contains "LR0.1"', "config.lr <<< nonsense (", 'name < "run-lr0.01"']


def _server_ids(d: Dashboard, expr: str) -> list[str] | str:
    q = urllib.parse.urlencode({"filter": expr, "limit": 1000})
    try:
        with urllib.request.urlopen(f"{d.url}/api/v1/projects/browser/runs?{q}", timeout=10) as r:
            return sorted(x["id"] for x in json.load(r)["runs"])
    except urllib.error.HTTPError as e:
        e.close()  # its socket now, not at a later test's garbage collection
        return f"error {e.code}"


def test_client_filter_agrees_with_server(dashboard: Dashboard, page: Any):
    """The page's filter evaluator selects exactly the server's runs, or defers to the server."""
    page.goto(dashboard.url + "/#/p/browser")
    page.wait_for_selector("#runs-scroller .tr")
    runs = _runs(dashboard)
    js = "async ([e, runs]) => { const r = await window.__wisp.filterRuns(e, runs, x => x);"
    js += " return r === null ? null : r.map(x => x.id).sort(); }"
    for expr in CLIENT_FILTERS:
        server = _server_ids(dashboard, expr)
        assert isinstance(server, list), (expr, server)
        assert page.evaluate(js, [expr, runs]) == server, expr
    assert {len(_server_ids(dashboard, e)) for e in CLIENT_FILTERS} >= {0, 1, 2, 3}
    for expr in SERVER_FILTERS:
        assert page.evaluate(js, [expr, runs]) is None, expr


def test_filter_on_loaded_project_runs_in_page(dashboard: Dashboard, page: Any):
    """With the whole project loaded, a filter is applied in the page; others go to the server."""
    page.goto(dashboard.url + "/#/p/browser")
    page.wait_for_selector("#runs-scroller .tr")
    for expr, want, how in [
        ('config.layers >= 3 or tags contains "baseline"', 3, "client"),
        ("config.lr < 0.01 and state = finished", 1, "client"),
        ('name contains "LR0.0"', 2, "server"),
    ]:
        page.fill("#filter", expr)
        page.press("#filter", "Enter")
        got = page.wait_for_function(
            "e => { const d = document.querySelector('#runs-scroller').dataset;"
            " return d.filter === e && d.filterMode; }",
            arg=expr,
        ).json_value()
        assert got == how, expr
        assert page.locator("#run-count").inner_text() == f"{want} run" + ("s" * (want != 1))
        assert sorted(_names(page)) == sorted(
            r["name"] for r in _runs(dashboard) if r["id"] in _server_ids(dashboard, expr)
        )
    assert "filter=" in page.url


def test_keyboard_opens_run_from_table(dashboard: Dashboard, page: Any):
    """Arrow keys move through rows and Enter opens the focused run."""
    page.goto(dashboard.url + "/#/p/browser?sort=name&order=asc")
    page.wait_for_selector("#runs-scroller .tr")
    page.locator("#runs-scroller .tr").first.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector(".run-page")
    assert page.locator(".title h1").inner_text() == "run-lr0.01"


def test_chart_draws_series_with_spike_preserved(dashboard: Dashboard, page: Any, shots: Path):
    """The loss chart plots the whole run, downsampled, yet its extremes include the spike."""
    rid = _run_id(dashboard, "run-lr0.1")
    page.goto(dashboard.url + f"/#/p/browser/r/{rid}")
    chart = _chart(page, "train/loss")
    d = chart.evaluate("el => ({...el.dataset})")
    assert float(d["ymax"]) == SPIKE
    assert float(d["xmin"]) == 0
    assert float(d["xmax"]) >= STEPS - 1 - STEPS / 100  # last bucket starts near the end
    assert int(d["count"]) == STEPS
    assert int(d["points"]) < STEPS  # downsampled by the server
    assert float(d["scaleYmax"]) >= SPIKE  # the y axis really shows the spike
    save_shot(page, shots, "run-page")
    # the val/* metrics are drawn against their step metric
    val = _chart(page, "val/loss").evaluate("el => ({...el.dataset})")
    assert float(val["xmax"]) == STEPS // 1000 - 1


def test_key_search_filters_charts_and_updates_url(dashboard: Dashboard, page: Any):
    """Searching metric keys hides non-matching charts and is kept in the URL."""
    rid = _run_id(dashboard, "run-lr0.1")
    page.goto(dashboard.url + f"/#/p/browser/r/{rid}")
    _chart(page, "train/loss")
    page.fill("#key-search", "acc")
    page.wait_for_selector('[data-cell="train/loss"]', state="detached")
    assert page.locator('[data-cell="train/acc"]').count() == 1
    assert "q=acc" in page.url


def test_drag_zoom_requeries_server_for_range(dashboard: Dashboard, page: Any):
    """Dragging over a chart fetches that x range from the server at full resolution."""
    rid = _run_id(dashboard, "run-lr0.1")
    page.goto(dashboard.url + f"/#/p/browser/r/{rid}")
    chart = _chart(page, "train/loss")
    before = chart.evaluate("el => ({...el.dataset})")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/api/v1/series" in r.url else None)
    box = chart.locator(".u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.02, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.08, y, steps=5)
    page.mouse.up()
    _until(page, "train/loss", "d.zoomed === '1' && +d.fetches >= 2")
    d = chart.evaluate("el => ({...el.dataset})")
    assert any("min=" in u and "max=" in u for u in requests), requests
    assert float(d["xmax"]) < STEPS / 5
    # re-queried at full resolution: many times more points per x unit than before
    density = int(d["points"]) / (float(d["xmax"]) - float(d["xmin"]))
    before_density = int(before["points"]) / (float(before["xmax"]) - float(before["xmin"]))
    assert density > 5 * before_density
    if float(d["xmin"]) <= SPIKE_STEP <= float(d["xmax"]):
        assert float(d["ymax"]) == SPIKE
    page.keyboard.press("Escape")
    _until(page, "train/loss", "d.zoomed === '0' && +d.fetches >= 3")


def test_compare_overlays_runs_with_legend(dashboard: Dashboard, page: Any, shots: Path):
    """Selecting runs and pressing Compare overlays them with a legend in consistent colours."""
    page.goto(dashboard.url + "/#/p/browser?sort=name&order=asc")
    page.wait_for_selector("#runs-scroller .tr")
    page.locator("#select-all").check()
    page.locator("#compare").click()
    page.wait_for_selector("#legend li")
    assert page.locator("#legend li").count() == 3
    chart = _chart(page, "train/loss")
    d = chart.evaluate("el => ({...el.dataset})")
    assert int(d["count"]) == 3 * STEPS
    assert float(d["ymax"]) == SPIKE
    colours = page.locator("#legend .swatch").evaluate_all(
        "els => els.map(e => getComputedStyle(e).backgroundColor)"
    )
    assert len(set(colours)) == 3
    save_shot(page, shots, "compare")


def test_live_run_chart_grows_with_incremental_fetches(dashboard: Dashboard, page: Any):
    """While a run is logging, its chart grows and new points are fetched with after=."""
    script = """
import time, wisp
run = wisp.init(project="browser", name="live-run", settings={"flush_interval": 0.1})
for step in range(400):
    wisp.log({"live/loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.05)
run.finish()
"""
    env = {**os.environ, "WISP_DIR": str(dashboard.workdir)}
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=dashboard.workdir, env=env)
    try:
        deadline = time.monotonic() + 30
        rid = None
        while rid is None and time.monotonic() < deadline:
            rid = next((r["id"] for r in _runs(dashboard) if r["name"] == "live-run"), None)
            time.sleep(0.2)
        assert rid, "the live run never reached the server"
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url) if "after=" in r.url else None)
        page.goto(dashboard.url + f"/#/p/browser/r/{rid}")
        page.wait_for_selector('figure.chart[data-key="live/loss"][data-drawn]', timeout=30_000)
        chart = page.locator('figure.chart[data-key="live/loss"]')
        first = float(chart.get_attribute("data-xmax") or "-1")
        _until(page, "live/loss", "+d.xmax > a + 20", arg=first, timeout=30_000)
        assert requests, "live updates should fetch only points after the last known x"
        assert page.locator("#live").inner_text() == "● live"
    finally:
        stop(proc, 60)
