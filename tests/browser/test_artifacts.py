"""The artifacts page and the lineage graphs, in a real browser, for artifacts logged offline by
the real SDK and imported by ``wisp ui``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, save_shot, start_dashboard

SCRIPT = """
import os, wisp
run = wisp.init(project="arts", name="prepare")
for n in (1, 2):
    ds = wisp.Artifact("ds", type="dataset", description="the data", metadata={"rows": n})
    with ds.new_file("train/a.csv", mode="w") as f:
        f.write("x\\n" * n)
    run.log_artifact(ds, aliases=["best"] if n == 1 else None)
run.finish()
print(run.id)
run = wisp.init(project="arts", name="train")
run.use_artifact("ds:best")
m = wisp.Artifact("model", type="model")
with m.new_file("weights.bin", mode="wb") as f:
    f.write(b"w" * 100)
run.log_artifact(m)
run.finish()
print(run.id)
"""


@pytest.fixture(scope="module")
def arts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dashboard, list[str]]]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("arts")
    cache = str(work / "cache")
    env = {**os.environ, "WISP_DIR": str(work), "WISP_CACHE_DIR": cache, "WISP_MODE": "offline"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, check=True, timeout=120, capture_output=True
    )
    ids = out.stdout.decode().split()
    old = os.environ.get("WISP_CACHE_DIR")
    os.environ["WISP_CACHE_DIR"] = cache  # wisp ui publishes from this cache
    d = start_dashboard(work, tmp_path_factory.mktemp("arts-data"))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # imported: both artifacts and the use edge
            with urllib.request.urlopen(f"{d.url}/api/v1/runs/{ids[1]}/artifacts") as r:
                got = json.loads(r.read())
            if got["consumed"] and got["produced"]:
                break
            time.sleep(0.25)
        yield d, ids
    finally:
        d.stop.set()
        d.thread.join(30)
        if old is None:
            os.environ.pop("WISP_CACHE_DIR", None)
        else:
            os.environ["WISP_CACHE_DIR"] = old


def test_artifacts_page_versions_files_lineage(
    arts: tuple[Dashboard, list[str]], page: Any, shots: Path
) -> None:
    """The project's artifacts list both names; an artifact shows its versions with aliases, the
    selected version's metadata and files (downloadable), and who produced and consumed it."""
    d, (prep, train) = arts
    page.goto(f"{d.url}/#/p/arts/artifacts")
    page.wait_for_selector("#artifacts")
    assert page.locator("#artifacts tr.artifact-row").count() == 2
    page.click("text=ds")
    page.wait_for_selector("#versions")
    text = page.inner_text("#versions")
    assert "v1" in text and "v0" in text and "best" in text
    page.goto(f"{d.url}/#/p/arts/artifacts/ds?v=best")
    page.wait_for_selector("#files")
    assert '"rows"' not in page.inner_text("#version-meta") or "1" in page.inner_text(
        "#version-meta"
    )
    assert "train/a.csv" in page.inner_text("#files")
    with page.expect_download() as dl:
        page.click("#files button.download")
    path = dl.value.path()
    assert Path(path).read_text() == "x\n"
    nodes = page.eval_on_selector_all(".lineage-node text", "els => els.map(e => e.textContent)")
    assert prep in nodes and train in nodes and "ds:v0" in nodes
    save_shot(page, shots, "artifacts-version")


def test_run_page_shows_lineage(arts: tuple[Dashboard, list[str]], page: Any) -> None:
    """A run's page draws the versions it consumed and produced around it."""
    d, (_prep, train) = arts
    page.goto(f"{d.url}/#/p/arts/r/{train}")
    page.wait_for_selector("#run-lineage svg.lineage")
    nodes = page.eval_on_selector_all(
        "#run-lineage .lineage-node text", "els => els.map(e => e.textContent)"
    )
    assert sorted(nodes) == sorted(["ds:v0", "model:v0", train])
