"""The automations page, in a real browser: a project's automations and their delivery log,
from a real ``wisp server`` that delivered a test event to a loopback receiver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser.conftest import STATIC, _missing
from tests.server.test_automations import Receiver, add, call, put_run, wait_for
from wisp.testing import Server


def test_the_page_lists_automations_and_their_deliveries(page: Any, tmp_path: Path) -> None:
    """``#/p/p/automations`` shows each automation's expression and its sent delivery; the
    project's header links to it."""
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    rx = Receiver()
    try:
        with Server(tmp_path / "srv", no_auth=True, key_scope="admin") as srv:
            put_run(srv, "r1")
            auto = add(srv, "summary.loss > 10", rx.url)
            path = f"/projects/p/automations/{auto['id']}"
            call(srv, "POST", f"{path}/test")
            wait_for(
                lambda: call(srv, "GET", f"{path}/deliveries")["deliveries"][0]["status"] == "sent"
            )
            page.goto(f"{srv.url}/#/p/p")
            page.click("#automations-link")
            section = page.locator(f"#automation-{auto['id']}")
            assert "summary.loss > 10" in section.inner_text()
            # the deliveries come in a second request: wait for them before counting
            page.wait_for_selector(f"#deliveries-{auto['id']} .delivery-row", timeout=30_000)
            row = page.locator(f"#deliveries-{auto['id']} .delivery-row")
            assert row.count() == 1
            assert "sent" in row.inner_text() and "200" in row.inner_text()
    finally:
        rx.close()
