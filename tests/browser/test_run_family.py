"""A fork and a rewound run, logged offline by the real SDK and imported by ``wisp ui``, on the
run page of a real browser: the family section, and the fork's chart through its parent."""

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

SCRIPT = """
import wisp
parent = wisp.init(project="fam", name="base")
for s in range(100):
    parent.log({"loss": float(s)})
parent.finish()
fork = wisp.init(fork_from=f"{parent.id}?_step=50", name="lower-lr")
for s in range(51, 61):
    fork.log({"loss": -float(s)})
fork.finish()
back = wisp.init(resume_from=f"{parent.id}?_step=80")
for s in range(81, 91):
    back.log({"loss": 1000.0 + s})
back.finish()
print(parent.id, fork.id)
"""


def _get(d: Dashboard, path: str) -> Any:
    with urllib.request.urlopen(f"{d.url}/api/v1{path}") as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dashboard, list[str]]]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("fam")
    env = {**os.environ, "WISP_DIR": str(work), "WISP_MODE": "offline"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, check=True, timeout=120, capture_output=True
    )
    ids = out.stdout.decode().split()
    d = start_dashboard(work, tmp_path_factory.mktemp("fam-data"))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # both imported, the fork's parent resolved
            try:
                got = _get(d, f"/runs/{ids[1]}/lineage")
                if (
                    got["parent"]
                    and got["parent"]["key"]
                    and _get(d, f"/runs/{ids[0]}/lineage")["set_aside"]
                ):
                    break
            except OSError:
                pass
            time.sleep(0.25)
        yield d, ids
    finally:
        d.stop.set()
        d.thread.join(30)


def test_the_run_page_shows_a_forks_family_and_its_history_through_the_parent(
    family: tuple[Dashboard, list[str]], page: Any
) -> None:
    """The fork's page says where it was forked from and links parent and fork in a graph;
    its series (what its chart draws) is the parent's 0..50 then its own 51..60; the rewound
    parent's page lists the rows set aside and links its fork."""
    d, (parent, fork) = family
    doc = _get(d, f"/series?runs={fork}&keys=loss&x=step&buckets=1000")
    (s,) = doc["series"]
    assert s["x"] == list(range(61)) and s["y"][50] == 50.0 and s["y"][51] == -51.0
    page.goto(f"{d.url}/#/p/fam/r/{fork}")
    page.wait_for_selector("#fork-note")
    assert f"Forked from run {parent} of fam at step 50" in page.inner_text("#fork-note")
    nodes = page.eval_on_selector_all(
        "#run-family .lineage-node text", "els => els.map(e => e.textContent)"
    )
    assert f"{parent} (to step 50)" in nodes and fork in nodes
    page.goto(f"{d.url}/#/p/fam/r/{parent}")
    page.wait_for_selector("#run-family .set-aside")
    text = page.inner_text("#run-family")
    assert "Rewind 0 to step 80 set aside 19 point(s) (steps 81 to 99)" in text
    nodes = page.eval_on_selector_all(
        "#run-family .lineage-node text", "els => els.map(e => e.textContent)"
    )
    assert "lower-lr (from step 51)" in nodes


def _rect(page: Any, sel: str) -> dict[str, float]:
    got: dict[str, float] = page.eval_on_selector(
        sel,
        "e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; }",
    )
    return got


def test_a_forks_chart_marks_its_parents_part_at_the_fork_steps_x_pixel(
    family: tuple[Dashboard, list[str]], page: Any
) -> None:
    """On the fork's page the loss chart shades the parent's part and draws a dashed line
    labelled with the parent at the x pixel of step 50 (read from the chart's scale and plot
    box); comparing parent and fork marks the fork's line only."""
    d, (parent, fork) = family
    page.goto(f"{d.url}/#/p/fam/r/{fork}")
    chart = '.chart[data-key="loss"]'
    page.wait_for_selector(f"{chart} .fork-line")
    over = _rect(page, f"{chart} .u-over")
    ds = page.eval_on_selector(chart, "e => ({lo: +e.dataset.scaleXmin, hi: +e.dataset.scaleXmax})")
    want = over["x"] + (50 - ds["lo"]) / (ds["hi"] - ds["lo"]) * over["w"]
    line = _rect(page, f"{chart} .fork-line")
    assert abs(line["x"] - want) <= 2.0, (line, want)
    assert line["h"] >= over["h"] - 1  # the plot's full height
    assert f"fork of {parent} at step 50" in page.inner_text(f"{chart} .fork-line")
    part = _rect(page, f"{chart} .fork-part")
    assert abs(part["x"] - over["x"]) <= 2.0 and abs(part["x"] + part["w"] - want) <= 2.0
    page.goto(f"{d.url}/#/p/fam/r/{fork}?x=relative")  # against time: at the server's fork_x
    page.wait_for_selector(f'{chart}[data-x="relative"] .fork-line')
    over = _rect(page, f"{chart} .u-over")
    ds = page.eval_on_selector(chart, "e => ({lo: +e.dataset.scaleXmin, hi: +e.dataset.scaleXmax})")
    at = float(page.get_attribute(f"{chart} .fork-line", "data-x"))
    assert ds["lo"] <= at <= ds["hi"]
    want = over["x"] + (at - ds["lo"]) / (ds["hi"] - ds["lo"]) * over["w"]
    assert abs(_rect(page, f"{chart} .fork-line")["x"] - want) <= 2.0
    page.goto(f"{d.url}/#/p/fam/compare?runs={parent},{fork}")
    page.wait_for_selector(f"{chart} .fork-line")
    runs = page.eval_on_selector_all(f"{chart} .fork-line", "els => els.map(e => e.dataset.run)")
    assert runs == [fork]
    over = _rect(page, f"{chart} .u-over")
    ds = page.eval_on_selector(chart, "e => ({lo: +e.dataset.scaleXmin, hi: +e.dataset.scaleXmax})")
    want = over["x"] + (50 - ds["lo"]) / (ds["hi"] - ds["lo"]) * over["w"]
    assert abs(_rect(page, f"{chart} .fork-line")["x"] - want) <= 2.0


def test_the_runs_table_shows_forks_indented_under_their_parent(
    family: tuple[Dashboard, list[str]], page: Any
) -> None:
    """Sorted by name, descending, the fork ("lower-lr") is above its parent ("base"); with
    "forks under parent" on, the fork's row is the row right under its parent's (one row
    height lower) and its name is indented; off again, the flat order is back."""
    d, (parent, fork) = family
    page.goto(f"{d.url}/#/p/fam?sort=name&order=desc")
    page.wait_for_selector(f'.tr[data-run="{parent}"]')
    flat = _rect(page, f'.tr[data-run="{fork}"]')["y"]
    assert flat < _rect(page, f'.tr[data-run="{parent}"]')["y"]
    page.check("#fork-tree")
    page.wait_for_selector(f'.tr.fork-child[data-run="{fork}"]')
    assert "forks=tree" in page.url
    top = _rect(page, f'.tr[data-run="{parent}"]')
    kid = _rect(page, f'.tr[data-run="{fork}"]')
    assert abs(kid["y"] - (top["y"] + top["h"])) <= 1.0, (top, kid)
    name_p = _rect(page, f'.tr[data-run="{parent}"] .run-name .swatch')
    name_k = _rect(page, f'.tr[data-run="{fork}"] .run-name .swatch')
    assert name_k["x"] >= name_p["x"] + 12
    page.uncheck("#fork-tree")
    page.wait_for_selector(f'.tr[data-run="{fork}"]:not(.fork-child)')
    assert _rect(page, f'.tr[data-run="{fork}"]')["y"] == flat
