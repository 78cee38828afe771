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
