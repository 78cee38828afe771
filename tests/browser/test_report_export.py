"""A report exported to HTML renders in Chromium from file:// with no network (wisp.reports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.reports.conftest import log_run, report_text
from wisp.reports import Report


def _open_offline(browser: Any, out: Path) -> tuple[Any, Any, list[str]]:
    """(context, page, the URLs it requested): ``out`` opened in a context with no network."""
    ctx = browser.new_context(offline=True)
    page = ctx.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    return ctx, page, requests


def test_exported_report_draws_offline_from_a_file(browser: Any, tmp_path: Path) -> None:
    """Every request the page makes is the file itself; the charts are drawn with each run's line."""
    ids = [log_run(lr, ["sweep"] if i < 3 else []) for i, lr in enumerate([1e-3, 1e-4, 1e-3, 3e-4])]
    report = Report.from_markdown(report_text(ids).replace("group: config.lr", "group: id"))
    out = Path(report.export_html(tmp_path / "report.html", tmp_path))
    ctx, page, requests = _open_offline(browser, out)
    assert requests == [out.as_uri()]
    lines = page.locator("section.panel[data-type=line] path.line")
    assert lines.count() == 3
    box = page.locator("section.panel[data-type=line] svg").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100
    assert all(len(lines.nth(i).get_attribute("d") or "") > 100 for i in range(3))
    assert page.locator("section.panel[data-type=bar] rect.bar").count() == 2
    assert page.locator("h1.title").inner_text() == "LR sweep"
    ctx.close()


def test_exported_media_panels_play_and_show_offline(browser: Any, tmp_path: Path) -> None:
    """Audio loads from its data: URI, a table's rows and an HTML page (its script not run)
    show in the exported file opened from file:// with no network."""
    import numpy as np

    import wisp

    run = wisp.init(project="spiral", mode="offline")
    tone = (np.sin(np.arange(8000) / 5) * 0.5).astype(np.float32)
    run.log(
        {
            "sound": wisp.Audio(tone, sample_rate=8000),
            "rows": wisp.Table(columns=["a", "b"], data=[[1, "first row"], [2, "second"]]),
            "page": wisp.Html(
                "<h2 id=hi>hello from a run</h2><script>document.title='ran'</script>"
            ),
        },
        step=1,
    )
    run.finish()
    report = Report(title="media", project="spiral")
    report.add_runset("all", filter="")
    for key in ("sound", "rows", "page"):
        report.add_panel("media", key=key)
    out = Path(report.export_html(tmp_path / "media.html", tmp_path))
    ctx, page, requests = _open_offline(browser, out)
    page.wait_for_function("document.querySelector('audio').readyState >= 1")
    assert page.evaluate("document.querySelector('audio').duration") == 1.0
    assert page.locator("figure[data-kind=table] td", has_text="first row").count() == 1
    frame = page.frame_locator("figure[data-kind=html] iframe")
    assert frame.locator("#hi").inner_text() == "hello from a run"
    assert page.title() == "media"
    assert all(u == out.as_uri() or u.startswith("data:") for u in requests)
    ctx.close()
