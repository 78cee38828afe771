"""Automations on real ``wisp server`` processes (SQLite and PostgreSQL) calling a loopback
webhook receiver: each trigger fires exactly once with a valid signature, failed sends are
retried, a restart neither loses nor repeats a delivery, and only project admins add them."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from wisp._protocol import RecordType
from wisp.testing import Server

SECRET = "s3cret"


class Receiver:
    """A loopback HTTP server that records every POST and answers with ``codes`` in turn
    (then 200)."""

    def __init__(self, codes: list[int] | None = None) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.codes = list(codes or [])
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                code = outer.codes.pop(0) if outer.codes else 200
                outer.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hook"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def events(self) -> list[dict[str, Any]]:
        """The payloads received, each checked against its signature."""
        out = []
        for headers, body in self.got:
            want = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            assert headers["x-wisp-signature-256"] == want
            out.append(json.loads(body))
        return out

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def call(srv: Server, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{srv.url}/api/v1{path}", data=data, method=method)
    req.add_header("Authorization", f"Bearer {key or srv.key}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        e.add_note(e.read().decode())
        raise
    return json.loads(raw) if raw else None


def wait_for(cond: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out")


def put_run(srv: Server, run: str, **cols: Any) -> None:
    call(srv, "PUT", f"/runs/{run}", {"project": "p", **cols})


def records(srv: Server, run: str, seq: int, kind: RecordType, data: dict[str, Any]) -> None:
    """One record with sequence ``seq`` from writer ``w`` (NaN travels as JSON's NaN token)."""
    body = {"writer_id": "w", "first_seq": seq, "records": [{"type": kind, "data": data}]}
    req = urllib.request.Request(
        f"{srv.url}/api/v1/runs/{run}/records", data=json.dumps(body).encode(), method="POST"
    )
    req.add_header("Authorization", f"Bearer {srv.key}")
    req.add_header("Content-Type", "application/json")
    try:
        urllib.request.urlopen(req, timeout=30).read()
    except urllib.error.HTTPError as e:
        e.add_note(e.read().decode())
        raise


def summary(srv: Server, run: str, values: dict[str, Any], seq: int) -> None:
    records(srv, run, seq, RecordType.SUMMARY, {"summary": values})


def add(srv: Server, when: str, url: str) -> dict[str, Any]:
    got: dict[str, Any] = call(
        srv, "POST", "/projects/p/automations", {"when": when, "webhook": url, "secret": SECRET}
    )
    return got


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "srv", db=db_url, key_scope="admin") as srv:
        yield srv


def test_threshold_and_nan_fire_once_each_on_the_edge(server: Server, receiver: Receiver) -> None:
    """``summary.loss > 10`` and ``summary.loss = nan`` each fire once per rise, signed; a
    value that stays true does not fire again, and one that falls and rises fires again."""
    high = add(server, "summary.loss > 10", receiver.url)
    nan = add(server, "summary.loss = nan", receiver.url)
    assert high["signed"] and "secret" not in high
    put_run(server, "r1")
    summary(server, "r1", {"loss": 11}, 0)
    wait_for(lambda: len(receiver.got) == 1)
    summary(server, "r1", {"loss": 12}, 1)  # still above: no second event
    summary(server, "r1", {"loss": float("nan")}, 2)
    wait_for(lambda: len(receiver.got) == 2)
    summary(server, "r1", {"loss": 1}, 3)
    time.sleep(2.5)
    summary(server, "r1", {"loss": 20}, 4)  # rises again: fires again
    wait_for(lambda: len(receiver.got) == 3)
    time.sleep(2.5)
    events = receiver.events()
    assert [e["automation"]["id"] for e in events] == [high["id"], nan["id"], high["id"]]
    assert all(e["version"] == 1 and e["run"]["id"] == "r1" and e["text"] for e in events)
    assert events[1]["run"]["summary"]["loss"] == "NaN"
    log = call(server, "GET", f"/projects/p/automations/{high['id']}/deliveries")["deliveries"]
    assert [(d["status"], d["attempts"], d["response_code"]) for d in log] == [
        ("sent", 1, 200),
        ("sent", 1, 200),
    ]


def test_failed_sends_are_retried_until_the_receiver_takes_them(
    server: Server, tmp_path: Path
) -> None:
    """A receiver answering 500 then 200 gets the event on the second try; the log says so."""
    rx = Receiver([500])
    try:
        auto = add(server, "summary.acc >= 0.9", rx.url)
        put_run(server, "r1")
        summary(server, "r1", {"acc": 0.95}, 0)
        wait_for(lambda: len(rx.got) == 2)
        log = wait_for(
            lambda: [
                d
                for d in call(server, "GET", f"/projects/p/automations/{auto['id']}/deliveries")[
                    "deliveries"
                ]
                if d["status"] == "sent"
            ]
        )
        assert (log[0]["attempts"], log[0]["response_code"]) == (2, 200)
        assert rx.got[0][0]["x-wisp-delivery"] == rx.got[1][0]["x-wisp-delivery"]
        assert rx.got[0][1] == rx.got[1][1]  # the very bytes that were signed
    finally:
        rx.close()


def test_a_killed_training_process_is_stored_crashed_and_fires(
    db_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    """A training process killed with SIGKILL is marked ``crashed`` in the database within the
    heartbeat timeout (a filter sees it), and ``state in (failed, crashed)`` fires once."""
    args = ["--heartbeat-timeout", "3"]
    with Server(tmp_path / "srv", db=db_url, key_scope="admin", args=args) as srv:
        add(srv, "state in (failed, crashed)", receiver.url)
        script = (
            "import time, wisp\n"
            "run = wisp.init(project='p', id='train')\n"
            "for i in range(100000):\n"
            "    run.log({'x': i}); time.sleep(0.05)\n"
        )
        env = {
            **os.environ,
            "WISP_SERVER_URL": srv.url,
            "WISP_API_KEY": srv.key,
            "WISP_MODE": "online",
            "WISP_HEARTBEAT_INTERVAL": "0.5",
            "WISP_DIR": str(tmp_path / "client"),
        }
        proc = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=tmp_path)
        try:
            wait_for(
                lambda: call(srv, "GET", "/projects/p/runs?filter=state%20%3D%20running")["runs"]
            )
            time.sleep(5)  # alive past the timeout: heartbeats keep it running
            assert not receiver.got
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        killed = time.monotonic()
        wait_for(lambda: len(receiver.got) == 1, timeout=30)
        # the 3 s timeout and a 1 s tick, with room for a loaded machine (the default is 300 s)
        assert time.monotonic() - killed < 3 + 12
        (event,) = receiver.events()
        assert event["run"]["state"] == "crashed"
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.connect() as conn:  # stored, not computed at read time
        assert conn.execute(text("SELECT state FROM runs WHERE given_id = 'train'")).scalar() == (
            "crashed"
        )
    engine.dispose()


def test_stalled_fires_for_a_run_alive_but_not_stepping(server: Server, receiver: Receiver) -> None:
    """``stalled > 2s``: a run that logged a step and then only sends heartbeats fires once."""
    add(server, "stalled > 2s", receiver.url)
    put_run(server, "r1")
    records(server, "r1", 0, RecordType.HISTORY, {"rows": [[0, 1.0, {"loss": 1.0}]]})
    for _ in range(8):
        call(server, "POST", "/runs/r1/heartbeat")
        time.sleep(0.5)
    wait_for(lambda: len(receiver.got) == 1)
    time.sleep(2)
    assert len(receiver.events()) == 1


def test_a_restart_between_detection_and_delivery_delivers_once(
    db_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    """A server that detected an event but had not sent it (``--no-deliver``) is killed; a new
    process on the same database sends it, once."""
    srv = Server(tmp_path / "srv", db=db_url, key_scope="admin", args=["--no-deliver"]).start()
    auto = add(srv, "summary.loss > 10", receiver.url)
    put_run(srv, "r1")
    summary(srv, "r1", {"loss": 11}, 0)
    wait_for(
        lambda: call(srv, "GET", f"/projects/p/automations/{auto['id']}/deliveries")["deliveries"]
    )
    assert srv.proc is not None
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.stop()
    srv.args = []
    with srv.start():
        wait_for(lambda: receiver.got)
        time.sleep(3)
        assert len(receiver.events()) == 1


def test_a_project_reader_cannot_add_automations(server: Server, receiver: Receiver) -> None:
    """Readers list a project's automations but adding one is refused (403)."""
    put_run(server, "r1")
    reader = server.create_key("read", "reader")
    with pytest.raises(urllib.error.HTTPError) as e:
        call(
            server,
            "POST",
            "/projects/p/automations",
            {"when": "state = crashed", "webhook": receiver.url},
            key=reader,
        )
    assert e.value.code == 403
    assert call(server, "GET", "/projects/p/automations", key=reader) == {"automations": []}
    with pytest.raises(urllib.error.HTTPError) as bad:
        add(server, "summary.loss >", receiver.url)
    assert bad.value.code == 422


def test_the_cli_and_api_add_list_pause_test_and_remove(server: Server, receiver: Receiver) -> None:
    """``wisp automation`` and ``wisp.Api().automations`` drive the endpoints: a paused
    automation does not fire, ``test`` sends a signed sample, ``rm`` removes it."""
    import wisp

    def cli(*argv: str) -> str:
        where = ["--server", server.url, "--key", server.key, "--project", "p"]
        out = subprocess.run(
            [sys.executable, "-m", "wisp.cli", "automation", *argv, *where],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout

    auto_id = cli(
        "add",
        "--when",
        "summary.loss > 10",
        "--webhook",
        receiver.url,
        "--secret",
        SECRET,
        "--name",
        "too high",
    ).strip()
    assert auto_id in cli("ls")
    assert "paused" in cli("pause", auto_id)
    put_run(server, "r1")
    summary(server, "r1", {"loss": 11}, 0)
    assert "test delivery" in cli("test", auto_id)
    (event,) = [e for e in wait_for(receiver.events) if e]
    assert (event["event"], event["run"]) == ("test", None)
    time.sleep(2)
    assert len(receiver.got) == 1  # paused: the run crossing the threshold is not sent
    api = wisp.Api(server.url, server.key)
    (row,) = api.automations.list("p")
    assert (row["name"], row["paused"], row["signed"]) == ("too high", True, True)
    assert api.automations.resume("p", auto_id)["paused"] is False
    (log,) = api.automations.deliveries("p", auto_id)
    assert (log["event"], log["status"]) == ("test", "sent")
    assert '"status": "sent"' in cli("deliveries", auto_id, "--json")
    cli("rm", auto_id)
    assert api.automations.list("p") == []
    api.close()


def test_two_server_processes_deliver_each_event_once(tmp_path: Path, receiver: Receiver) -> None:
    """Two processes on one PostgreSQL database both detect and deliver: ten runs crossing
    a threshold reach the receiver ten times, once each."""
    from tests.server.conftest import PG_HOST
    from wisp.testing import temporary_postgres_database

    with temporary_postgres_database(PG_HOST) as url:
        same_key = ["--secrets-key-file", str(tmp_path / "secrets.key")]  # both decrypt
        a = Server(tmp_path / "a", db=url, key_scope="admin", args=same_key).start()
        b = Server(tmp_path / "b", db=url, key=a.key, args=same_key).start()
        try:
            add(a, "summary.loss > 10", receiver.url)
            for i in range(10):
                srv = a if i % 2 else b
                put_run(srv, f"r{i}")
                summary(srv, f"r{i}", {"loss": 11 + i}, 0)
            wait_for(lambda: len(receiver.got) >= 10)
            time.sleep(3)
            runs = sorted(e["run"]["id"] for e in receiver.events())
            assert runs == sorted(f"r{i}" for i in range(10))
        finally:
            a.stop()
            b.stop()


def test_an_automation_sends_at_most_its_rate_a_minute(store: Any) -> None:
    """35 runs crossing the threshold at once: 30 deliveries are queued, 5 logged ``limited``
    (and none of the 35 fires again while it stays above)."""
    from wisp.server.store.automations import RATE_PER_MINUTE, AutomationStore

    autos = AutomationStore(store)
    auto = autos.create("p", "", "summary.loss > 10", "http://127.0.0.1:9/x", None, None)
    for i in range(35):
        store.put_run(f"r{i}", {"project": "p", "summary": {"loss": 11}})
    changed = autos.changed_since(0.0)
    assert autos.evaluate(changed) == 35
    assert autos.evaluate(changed) == 0
    log = autos.deliveries("p", auto["id"], 100)
    statuses = sorted(d["status"] for d in log)
    assert statuses == ["limited"] * (35 - RATE_PER_MINUTE) + ["pending"] * RATE_PER_MINUTE
