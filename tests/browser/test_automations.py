"""The automations page, in a real browser: a project's automations and their delivery log,
from a real ``wisp server`` that delivered a test event to a loopback receiver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.browser.conftest import STATIC, _missing
from tests.server.test_automations import SECRET, Receiver, add, call, put_run, summary, wait_for
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


def test_an_admin_adds_and_pauses_an_automation_on_the_page(page: Any, tmp_path: Path) -> None:
    """Signed in with an admin key, the page's form adds an automation (a bad trigger shows
    the server's 422 beside it), the new automation fires once with a valid signature, and
    Pause stores ``paused`` (the button then says Resume)."""
    if not STATIC.exists():
        _missing("the built dashboard (src/wisp/server/static)")
    rx = Receiver()
    try:
        with Server(tmp_path / "srv", key_scope="admin") as srv:
            put_run(srv, "r1")
            # signed in with the admin's API key, as the login page's key field stores it
            page.add_init_script(f"localStorage.setItem('wisp.apiKey', {json.dumps(srv.key)})")
            page.goto(f"{srv.url}/#/p/p/automations")
            page.fill("#automation-when", "summary.loss >")
            page.fill("#automation-webhook", rx.url)
            page.click("#automation-add")
            page.wait_for_selector("#automation-error:has-text('when')")
            page.fill("#automation-name", "too high")
            page.fill("#automation-when", "summary.loss > 10")
            page.fill("#automation-secret", SECRET)
            page.click("#automation-add")
            page.wait_for_selector(".automation:has-text('too high')")
            (auto,) = call(srv, "GET", "/projects/p/automations")["automations"]
            assert (auto["when"], auto["signed"], auto["paused"]) == (
                "summary.loss > 10",
                True,
                False,
            )
            summary(srv, "r1", {"loss": 11}, 0)
            wait_for(lambda: rx.got)
            (event,) = rx.events()  # signature checked
            assert event["automation"]["id"] == auto["id"]
            section = page.locator(f"#automation-{auto['id']}")
            section.locator(".automation-pause").click()
            page.wait_for_selector(f"#automation-{auto['id']} .automation-pause:has-text('Resume')")
            assert "paused" in section.locator(".automation-state").inner_text()
            assert call(srv, "GET", f"/projects/p/automations/{auto['id']}")["paused"] is True
    finally:
        rx.close()
