"""The sweep page in Chromium, on a real server holding a sweep run by a real agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._procs import stop
from tests.browser.conftest import STATIC, _missing, save_shot
from tests.sweeps._helpers import Server, at, create_sweep, run_cli


@pytest.fixture
def swept(tmp_path: Path) -> Iterator[tuple[Server, str]]:
    """A server and a finished 6-trial random sweep whose runs were uploaded online."""
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    srv = Server(tmp_path)
    try:
        sweep_id = create_sweep(
            tmp_path,
            {
                "name": "page-test",
                "method": "random",
                "metric": {"name": "loss", "goal": "minimize"},
                "parameters": {
                    "x": {"min": 0.0, "max": 2.0},
                    "y": {"min": -2.0, "max": 0.0},
                    "opt": {"values": ["sgd", "adam"]},
                },
                "run_cap": 6,
            },
            project="sweep-page",
            env=srv.env(),
        )
        res = run_cli("agent", sweep_id, base=tmp_path, env=srv.env(), timeout=200)
        assert res.returncode == 0, res.stderr
        yield srv, sweep_id
    finally:
        srv.stop()


def test_sweep_page_shows_best_run_chart_parallel_coordinates_and_importance(
    swept: tuple[Server, str], page: Any, shots: Path
) -> None:
    """The page lists every trial, links the best run, plots the metric and the parameters,
    without waiting for the parameter importance (held back here until the rest is shown)."""
    srv, sweep_id = swept
    trials = srv.get(f"{at(sweep_id)}/trials")["trials"]
    best = min(trials, key=lambda t: t["value"])
    held: list[Any] = []  # the importance request, answered once the page is checked
    page.route("**/importance", lambda route: held.append(route))
    page.goto(f"{srv.url}/#/sweeps")
    page.locator(f"#sweeps a[href='#/sweeps/{sweep_id}']").click()  # sweep-page/<id>
    page.wait_for_selector("#sweep-runs")
    assert page.locator("#sweep-importance").get_attribute("data-pending") == "true"
    assert page.locator("#sweep-runs tbody tr").count() == 6
    link = page.locator("#sweep-best a")
    assert link.get_attribute("href") == f"#/p/sweep-page/r/{best['run_id']}"
    chart = page.locator("#sweep-metric")
    chart.locator("canvas").first.wait_for()
    assert chart.get_attribute("data-points") == "6"
    assert float(chart.get_attribute("data-best")) == pytest.approx(best["value"])
    page.wait_for_function("() => document.querySelector('#sweep-metric').dataset.xticks")
    ticks = [float(t) for t in chart.get_attribute("data-xticks").split(",")]
    assert ticks and all(t == int(t) for t in ticks), ticks  # trial numbers: no 0.25 ticks
    crumbs = " ".join(page.locator("header#top").inner_text().lower().split())
    assert "sweeps sweeps" not in crumbs
    par = page.locator("#sweep-parallel")
    assert par.get_attribute("data-lines") == "6"
    # an axis for each parameter that varies: opt is one of two values drawn at random, the
    # same in all six trials once in 32 sweeps (the sweep's seed is random)
    varied = {k for k in ("x", "y", "opt") if len({t["params"][k] for t in trials}) > 1}
    assert set(par.get_attribute("data-axes").split(",")) == varied | {"loss"}
    assert par.locator("polyline").count() == 6
    assert len(held) == 1 and page.locator("#sweep-importance tr").count() == 0
    held[0].continue_()
    page.wait_for_selector("#sweep-importance tr[data-param]")
    params = {r.get_attribute("data-param") for r in page.locator("#sweep-importance tr").all()}
    assert params == {"x", "y", "opt"}
    save_shot(page, shots, "sweep", full_page=True)
    link.click()  # the best run's own page opens
    page.wait_for_selector("#key-search")
    assert best["run_id"] in page.url


def test_sweep_page_is_live_while_the_sweep_runs(tmp_path: Path, page: Any) -> None:
    """Trials appear on an open sweep page as the agent runs them, with no reload."""
    import subprocess

    from tests.sweeps._helpers import env_for, wisp_cmd

    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    srv = Server(tmp_path)
    agent = None
    try:
        sweep_id = create_sweep(
            tmp_path,
            {
                "method": "random",
                "metric": {"name": "loss"},
                "parameters": {
                    "x": {"min": 0.0, "max": 2.0},
                    "steps": {"value": 6},
                    "sleep": {"value": 0.3},
                },
                "run_cap": 3,
            },
            project="live",
            env=srv.env(),
        )
        page.goto(f"{srv.url}/#/sweeps/{sweep_id.split('/')[-1]}")  # an old link: the bare id
        page.wait_for_url(f"**/#/sweeps/{sweep_id}")
        page.wait_for_selector("#sweep-runs")
        assert page.locator("#sweep-runs tbody tr").count() == 0
        agent = subprocess.Popen(
            wisp_cmd("agent", sweep_id), cwd=tmp_path, env=env_for(tmp_path, srv.env())
        )
        page.wait_for_function(
            "document.querySelectorAll('#sweep-runs tbody tr').length === 3"
            " && document.getElementById('sweep-facts').textContent.includes('finished')",
            timeout=90_000,
        )
        assert agent.wait(60) == 0
        assert page.locator("#live").text_content() == ""  # no more polling once finished
    finally:
        if agent is not None:
            stop(agent)
        srv.stop()
