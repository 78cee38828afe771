"""wisp.alert(): ALERT records and webhook delivery to a real local HTTP server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import wisp


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"ctype": self.headers["Content-Type"], **json.loads(body)})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def test_alert_is_recorded_and_posted(
    tmp_path: Path, webhook: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An alert becomes an ALERT record and a JSON POST (Slack-style text included) to the
    webhook named by WISP_ALERT_WEBHOOK."""
    url, received = webhook
    monkeypatch.setenv("WISP_ALERT_WEBHOOK", url)
    run = wisp.init(project="alerts", name="r1")
    wisp.log({"loss": 9.0})
    sender = wisp.alert("loss high", "loss is 9", level=wisp.AlertLevel.WARN)
    assert sender is not None
    sender.join(10)
    wisp.finish()
    assert received == [
        {
            "ctype": "application/json",
            "text": "[WARN] loss high: loss is 9",
            "title": "loss high",
            "body": "loss is 9",
            "level": "WARN",
            "run_id": run.id,
            "run_name": "r1",
            "project": "alerts",
            "ts": received[0]["ts"],
        }
    ]
    data = wisp.open_run(run.dir)
    (rec,) = data.records["alert"]
    assert rec["title"] == "loss high" and rec["level"] == "WARN" and rec["step"] == 1
    assert rec["sent"] is True
    assert data.finish is not None and data.finish["failures"] == {}


def test_wait_duration_suppresses_repeats(
    tmp_path: Path, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    """A second alert with the same title inside wait_duration is recorded but not sent."""
    url, received = webhook
    run = wisp.init(project="alerts", settings={"alert_webhook": url})
    first = wisp.alert("t", "one", wait_duration=3600)
    second = wisp.alert("t", "two", wait_duration=3600)
    third = wisp.alert("other", "three", level="ERROR")
    assert first is not None and second is None and third is not None
    first.join(10)
    third.join(10)
    wisp.finish()
    assert sorted(r["body"] for r in received) == ["one", "three"]
    sent = [r["sent"] for r in wisp.open_run(run.dir).records["alert"]]
    assert sent == [True, False, True]


def test_unreachable_webhook_is_counted_not_raised(tmp_path: Path) -> None:
    """A webhook that refuses connections is counted under 'alert' in the finish record;
    neither alert() nor finish() raises."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = wisp.init(project="alerts", settings={"alert_webhook": f"http://127.0.0.1:{port}/"})
    sender = wisp.alert("t", "x")
    assert sender is not None
    sender.join(10)
    wisp.finish()
    data = wisp.open_run(run.dir)
    assert data.finish is not None and data.finish["failures"] == {"alert": 1}
    assert data.records["alert"][0]["title"] == "t"


def test_alert_without_webhook_only_records(tmp_path: Path) -> None:
    """Without a webhook nothing is sent and the alert is still recorded."""
    run = wisp.init(project="alerts")
    assert wisp.alert("t", "x") is None
    wisp.finish()
    assert wisp.open_run(run.dir).records["alert"][0]["sent"] is True


def test_alert_refuses_bad_arguments(tmp_path: Path) -> None:
    """Bad titles, levels and wait durations raise; alert() needs a run."""
    with pytest.raises(wisp.RunStateError):
        wisp.alert("t", "x")
    wisp.init(project="alerts")
    with pytest.raises(wisp.UsageError, match="title"):
        wisp.alert("", "x")
    with pytest.raises(wisp.UsageError, match="level must be INFO, WARN or ERROR"):
        wisp.alert("t", "x", level="LOUD")
    with pytest.raises(wisp.UsageError, match="wait_duration"):
        wisp.alert("t", "x", wait_duration="soon")  # type: ignore[arg-type]
