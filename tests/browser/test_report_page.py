"""The dashboard's report page on `wisp ui` (web/src/report/): panels drawn from the runs its
run sets select, the editor saving a new version, versions and their diff."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import STATIC, Dashboard, _missing, save_shot, start_dashboard

REPORT = """---
title: Page test
project: rep
runsets:
  slow: {filter: "config.lr < 0.05"}
---
The slow learners.

```wisp-panel
type: line
runset: slow
y: [loss]
```
"""
SCRIPT = """
import wisp
for lr in (0.1, 0.01, 0.001):
    run = wisp.init(project="rep", config={"lr": lr},
                    settings={"system_metrics": False, "console": "off", "git": False})
    for s in range(100):
        wisp.log({"loss": 1 / (1 + s * lr), "acc": s / 100}, step=s)
    if lr == 0.001:  # media at a step, for the media panel
        import numpy as np
        tone = (np.sin(np.arange(4000) / 5) * 0.5).astype(np.float32)
        wisp.log({"sound": wisp.Audio(tone, sample_rate=8000),
                  "rows": wisp.Table(columns=["a"], data=[["a table cell"]])}, step=99)
    print(run.id, lr)
    run.finish()
"""


def _push(url: str, rid: str, markdown: str) -> None:
    """PUT a report of project ``rep`` on the ui at ``url``."""
    req = urllib.request.Request(
        f"{url}/api/v1/projects/rep/reports/{rid}", json.dumps({"markdown": markdown}).encode(),
        method="PUT", headers={"Content-Type": "application/json"},
    )  # fmt: skip
    urllib.request.urlopen(req).close()


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dashboard, dict[str, float]]]:
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    work = tmp_path_factory.mktemp("work")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=work, check=True, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "WISP_DIR": str(work), "PYTHONPATH": ":".join(sys.path)},
    )  # fmt: skip
    lrs = {line.split()[0]: float(line.split()[1]) for line in out.stdout.splitlines()}
    d = start_dashboard(work, tmp_path_factory.mktemp("data"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{d.url}/api/v1/projects/rep/runs") as res:
            if json.load(res)["total"] == 3:
                break
        time.sleep(0.2)
    _push(d.url, "r1", REPORT)
    yield d, lrs
    d.stop.set()
    d.thread.join(30)


def test_report_page_draws_the_selected_runs_and_saves_versions(
    ui: tuple[Dashboard, dict[str, float]], page: Any, shots: Path
) -> None:
    """The page draws the two runs the filter selects (not the third); an edit is version 2."""
    d, lrs = ui
    page.goto(f"{d.url}/#/p/rep/reports/r1")
    view = page.frame_locator("#report-view")
    lines = view.locator("section.panel[data-type=line] path.line")
    lines.first.wait_for()
    drawn = {lines.nth(i).get_attribute("data-run") for i in range(lines.count())}
    assert drawn == {rid for rid, lr in lrs.items() if lr < 0.05}
    save_shot(page, shots, "report-page")
    page.click("#report-edit")
    editor = page.locator("#report-editor")
    editor.wait_for()
    editor.fill(REPORT.replace("y: [loss]", "y: [loss, acc]").replace("slow learners", "slow ones"))
    preview = page.frame_locator("#report-preview")
    preview.locator("path.line").nth(3).wait_for()
    save_shot(page, shots, "report-editor")
    page.click("#report-save")
    page.locator("#report-versions tbody tr").nth(1).wait_for()
    assert "version 2 of 2" in page.locator("#report-meta").inner_text()
    assert page.frame_locator("#report-view").locator("path.line").count() == 4
    page.locator("#report-versions button[data-version='2']").first.click()
    page.wait_for_function("document.querySelector('#report-diff').textContent.includes('+')")
    diff = page.locator("#report-diff").inner_text()
    assert "-The slow learners." in diff and "+The slow ones." in diff


def test_a_new_report_starts_from_a_template_and_is_listed(
    ui: tuple[Dashboard, dict[str, float]], page: Any
) -> None:
    """ "New report" opens the editor on a template drawn live; saving lists it under reports."""
    d, _ = ui
    page.goto(f"{d.url}/#/p/rep/reports")
    page.click("#new-report")
    page.locator("#report-editor").wait_for()
    page.frame_locator("#report-preview").locator("section.panel[data-type=runs]").wait_for()
    page.click("#report-save")
    page.locator("#report-meta").wait_for()
    assert "version 1 of 1" in page.locator("#report-meta").inner_text()
    page.goto(f"{d.url}/#/p/rep/reports")
    page.locator("#reports tbody tr").nth(1).wait_for()
    titles = page.locator("#reports tbody tr td:first-child").all_inner_texts()
    assert sorted(titles) == ["New report", "Page test"]


def test_report_page_media_panels_play_audio_and_show_tables(
    ui: tuple[Dashboard, dict[str, float]], page: Any
) -> None:
    """A media panel on the report page holds an audio player with its sound loaded and a
    logged table's rows, in the page's sandboxed frame."""
    d, _ = ui
    text = REPORT.replace("y: [loss]", "type: media").replace("type: line\n", "")
    text = text.replace("type: media", "type: media\nkey: sound")
    text += "\n```wisp-panel\ntype: media\nrunset: slow\nkey: rows\n```\n"
    _push(d.url, "media", text)
    deadline = time.monotonic() + 60  # the ui uploads the media files after the runs
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{d.url}/api/v1/projects/rep/reports/media/html") as res:
            if b"<audio" in res.read():
                break
        time.sleep(0.5)
    page.goto(f"{d.url}/#/p/rep/reports/media")
    view = page.frame_locator("#report-view")
    audio = view.locator("figure[data-kind=audio] audio")
    audio.wait_for()
    audio.evaluate("a => a.readyState >= 1 || new Promise(r => a.onloadedmetadata = r)")
    assert audio.evaluate("a => a.duration") == 0.5
    assert view.locator("figure[data-kind=table] td").inner_text() == "a table cell"
