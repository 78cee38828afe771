"""Two ``wisp server`` processes on one database behind nginx (as in test_stateless): every
automation event, whichever process ingested it and whichever detects and sends it, reaches
the webhook exactly once, signed."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.server.conftest import PG_HOST
from tests.server.test_automation_measures import publish
from tests.server.test_automations import Receiver, add, call, put_run, summary, wait_for
from tests.server.test_stateless import Nginx, _nginx
from wisp.testing import Server, temporary_postgres_database

pytestmark = pytest.mark.slow


@pytest.fixture
def rx() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_two_processes_behind_nginx_deliver_each_event_once(tmp_path: Path, rx: Receiver) -> None:
    """Twenty runs crossing a threshold and three artifact events, all sent through nginx to
    two processes that both detect and deliver: 23 webhook calls, one per event, each with a
    valid signature and its own delivery id, and the log says each was sent once."""
    _nginx()
    keys = ["--secrets-key-file", str(tmp_path / "secrets.key"), "--key-rate", "0"]
    with temporary_postgres_database(PG_HOST) as db:
        a = Server(tmp_path / "a", db=db, key_scope="admin", args=keys)
        b = Server(tmp_path / "b", db=db, key=a.key, args=keys)
        proxy = None
        try:
            a.start()
            b.start()
            proxy = Nginx(tmp_path / "nginx", [a.port, b.port])
            front = cast(Server, SimpleNamespace(url=proxy.url, key=a.key))  # all via nginx
            runs = add(front, "summary.loss > 10", rx.url)
            arts = add(front, "artifact.alias = production", rx.url)
            for i in range(20):
                put_run(front, f"r{i}")
                summary(front, f"r{i}", {"loss": 11 + i}, 0)
            for n in range(3):
                publish(front, "model", n, ["production"])
            wait_for(lambda: len(rx.got) >= 23, timeout=60)
            time.sleep(3)  # nothing more arrives
            events = rx.events()  # each signature checked
            assert len(events) == 23
            per_run = Counter(e["run"]["id"] for e in events if e["event"] == "run")
            assert per_run == Counter({f"r{i}": 1 for i in range(20)})
            versions = sorted(e["artifact"]["version"] for e in events if e["event"] == "artifact")
            assert versions == ["v0", "v1", "v2"]
            assert len({h["x-wisp-delivery"] for h, _ in rx.got}) == 23
            for auto in (runs, arts):
                log = call(front, "GET", f"/projects/p/automations/{auto['id']}/deliveries")
                assert {(d["status"], d["attempts"]) for d in log["deliveries"]} == {("sent", 1)}
            assert all(json.loads(body)["version"] == 1 for _, body in rx.got)
        finally:
            if proxy is not None:
                proxy.stop()
            a.stop()
            b.stop()
