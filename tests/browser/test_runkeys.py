"""The dashboard with one run id in three projects (``pa``, ``pb`` and the entity project
``vision/pa``): each project's table opens its own run (the page addresses runs by their
server key, and shows the id; ``entity/project`` goes through the ``/entities`` paths)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, start_dashboard


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("work")
    script = """
import time, wisp
for entity, project, name, value in (
    (None, "pa", "alpha", 1.0), (None, "pb", "beta", 9.0), ("vision", "pa", "gamma", 5.0)
):
    run = wisp.init(project=project, entity=entity, id="same", name=name)
    for step in range(20):
        wisp.log({"loss": value}, step=step)
    run.finish()
    time.sleep(1.1)  # run directories are named by the second and the id
"""
    env = {**os.environ, "WISP_DIR": str(work)}
    subprocess.run([sys.executable, "-c", script], cwd=work, env=env, check=True, timeout=120)
    d = start_dashboard(work, tmp_path_factory.mktemp("data"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # both imported
        got = [_runs(d, p) for p in ("pa", "pb", "vision/pa")]
        if all(r and r[0]["state"] == "finished" for r in got):
            break
        time.sleep(0.2)
    yield d
    d.stop.set()
    d.thread.join(30)


def _runs(d: Dashboard, project: str) -> list[dict[str, Any]]:
    from wisp._protocol import project_path

    with urllib.request.urlopen(f"{d.url}/api/v1{project_path(project)}/runs", timeout=10) as r:
        return list(json.loads(r.read())["runs"])


def test_each_project_opens_its_own_run_with_one_id(twins: Dashboard, page: Any) -> None:
    """Runs ``pa/same`` and ``pb/same`` are two runs; the table of each opens its own."""
    (a,) = _runs(twins, "pa")
    (b,) = _runs(twins, "pb")
    (c,) = _runs(twins, "vision/pa")
    assert a["id"] == b["id"] == c["id"] == "same" and len({a["key"], b["key"], c["key"]}) == 3
    for project, run, name in (("pa", a, "alpha"), ("pb", b, "beta"), ("vision/pa", c, "gamma")):
        page.goto(f"{twins.url}/#/p/{quote(project, safe='')}")
        page.locator("#runs-scroller .run-name").first.click()
        page.wait_for_selector(".run-page")
        assert page.locator(".title h1").inner_text() == name
        assert page.locator(".run-page").get_attribute("data-run") == run["key"]


def test_the_projects_page_opens_an_entity_project(twins: Dashboard, page: Any) -> None:
    """The landing page lists ``vision/pa`` by its full name and opens its own runs table."""
    page.goto(f"{twins.url}/#/")
    link = page.get_by_text("vision/pa", exact=True)
    link.click()
    page.wait_for_selector("#runs-scroller .run-name")
    assert page.locator("#runs-scroller .run-name").all_inner_texts() == ["gamma"]
