"""A report exported to HTML renders in Chromium from file:// with no network (wisp.reports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.reports.conftest import log_run, report_text
from wisp.reports import Report


def test_exported_report_draws_offline_from_a_file(browser: Any, tmp_path: Path) -> None:
    """Every request the page makes is the file itself; the charts are drawn with each run's line."""
    ids = [log_run(lr, ["sweep"] if i < 3 else []) for i, lr in enumerate([1e-3, 1e-4, 1e-3, 3e-4])]
    report = Report.from_markdown(report_text(ids).replace("group: config.lr", "group: id"))
    out = Path(report.export_html(tmp_path / "report.html", tmp_path))
    ctx = browser.new_context(offline=True)
    page = ctx.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    assert requests == [out.as_uri()]
    lines = page.locator("section.panel[data-type=line] path.line")
    assert lines.count() == 3
    box = page.locator("section.panel[data-type=line] svg").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100
    assert all(len(lines.nth(i).get_attribute("d") or "") > 100 for i in range(3))
    assert page.locator("section.panel[data-type=bar] rect.bar").count() == 2
    assert page.locator("h1.title").inner_text() == "LR sweep"
    ctx.close()
