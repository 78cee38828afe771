"""The uploader against a real server process: outages, faults, fatal errors, finish()."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from _sync_helpers import FlakyProxy, latencies_ok, need_server_package

import wisp
from wisp._runfile import HEADER, RecordType, encode_history, encode_record, iter_records
from wisp._upload._live import UNREACHABLE_WAIT
from wisp._upload._transport import ApiClient
from wisp._upload._uploader import Cursor, Uploader
from wisp.errors import FatalApiError
from wisp.testing import Server, free_port

pytestmark = pytest.mark.timeout(120)


def _online(url: str, tmp_path: Path, key: str, **extra: Any) -> dict[str, Any]:
    return {
        "server_url": url,
        "api_key": key,
        "dir": str(tmp_path),
        "flush_interval": 0.05,
        **extra,
    }


def _log_rows(n: int, start: int = 0, pause_every: int = 0, pause: float = 0.0) -> list[float]:
    lat = []
    for i in range(start, start + n):
        t0 = time.perf_counter()
        wisp.log({"loss": i * 0.5, "i": i})
        lat.append(time.perf_counter() - t0)
        if pause_every and i % pause_every == pause_every - 1:
            time.sleep(pause)
    return lat


def _assert_exact(srv: Server, run_id: str, n: int) -> None:
    loss = srv.points(run_id, "loss")
    assert [s for s, _ in loss] == list(range(n)), "steps missing or duplicated"
    assert [v for _, v in loss] == [i * 0.5 for i in range(n)]
    assert [v for _, v in srv.points(run_id, "i")] == list(range(n))


def test_online_run_uploads_everything_and_saves_its_cursor(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """An online run ends with every point on the server and a done cursor in upload.json."""
    run = wisp.init(
        project="up", config={"lr": 0.1}, settings=_online(server.url, tmp_path, server.key)
    )
    assert run.mode == "online"
    _log_rows(3000)
    run.finish()
    _assert_exact(server, run.id, 3000)
    doc = server.get(f"/runs/{run.id}")
    assert doc["state"] == "finished" and doc["config"] == {"lr": 0.1}
    cursor = json.loads((Path(run.dir) / "upload.json").read_text())
    assert cursor["done"] is True and cursor["server"] == server.url
    assert cursor["offset"] == os.path.getsize(run.file_path)
    assert set(cursor) == {"server", "offset", "acked_seq", "writer_id", "done"}


@pytest.mark.slow
def test_server_stopped_for_10s_mid_run_loses_nothing(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """A server down for 10 s mid-run ends up with exactly the logged points; log() stays fast."""
    run = wisp.init(
        project="up", settings=_online(server.url, tmp_path, server.key, upload_timeout=60)
    )
    lat = _log_rows(1000, pause_every=100, pause=0.1)
    server.stop()
    t_end = time.monotonic() + 10
    n = 1000
    while time.monotonic() < t_end:
        lat += _log_rows(100, start=n)
        n += 100
        time.sleep(0.1)
    server.start()
    lat += _log_rows(1000, start=n, pause_every=100, pause=0.05)
    n += 1000
    run.finish()
    _assert_exact(server, run.id, n)
    assert run.part("uploader").retries > 0
    latencies_ok(lat)


def test_500_and_429_on_a_third_of_requests_loses_and_doubles_nothing(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """With a proxy failing 1/3 of requests all arrive once."""
    with FlakyProxy(server.url, share=1 / 3, seed=7) as proxy:
        run = wisp.init(
            project="up", settings=_online(proxy.url, tmp_path, server.key, upload_timeout=60)
        )
        lat = _log_rows(4000, pause_every=200, pause=0.05)
        run.finish()
        assert proxy.failed >= 3, "the proxy should have failed some requests"
    _assert_exact(server, run.id, 4000)
    assert server.get(f"/runs/{run.id}")["state"] == "finished"
    latencies_ok(lat)


def test_server_unreachable_at_init_then_started(tmp_path: Path, no_run: None) -> None:
    """init() with no server returns within init_timeout; uploads happen once it starts."""
    need_server_package()
    srv = Server(tmp_path, no_auth=True)
    t0 = time.monotonic()
    run = wisp.init(
        project="up",
        settings=_online(srv.url, tmp_path, srv.key, init_timeout=1, upload_timeout=60),
    )
    assert time.monotonic() - t0 < 3
    try:
        lat = _log_rows(2000)
        srv.start()
        run.finish()
        _assert_exact(srv, run.id, 2000)
        latencies_ok(lat)
    finally:
        srv.stop()


def test_finish_stops_at_upload_timeout_and_sync_completes(
    tmp_path: Path, no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no server ever reachable, finish() returns within the short bound, says `wisp sync` once; sync finishes."""
    need_server_package()
    srv = Server(tmp_path, no_auth=True)
    run = wisp.init(
        project="up",
        settings=_online(srv.url, tmp_path, srv.key, init_timeout=0.2, upload_timeout=20),
    )
    _log_rows(500)
    t0 = time.monotonic()
    run.finish()
    assert time.monotonic() - t0 < UNREACHABLE_WAIT + 1
    err = capsys.readouterr().err
    assert err.count("not uploaded") == 1 and f"wisp sync {run.dir}" in err
    assert "could not be reached (ConnectionRefusedError" in err
    srv.start()
    try:
        (res,) = wisp.sync([run.dir], server_url=srv.url, api_key=srv.key)
        assert res.done and res.records > 0
        _assert_exact(srv, run.id, 500)
    finally:
        srv.stop()


def test_nothing_listening_ends_the_init_wait_at_once(
    tmp_path: Path, no_run: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A refused connection ends init()'s wait at once (not init_timeout), with one warning; run.url is the run's dashboard page."""
    url = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    run = wisp.init(project="up", settings=_online(url, tmp_path, "k", init_timeout=30))
    assert time.monotonic() - t0 < 10  # at once, not after init_timeout (30 s)
    warned = [r.getMessage() for r in caplog.records if "cannot reach the server" in r.getMessage()]
    assert len(warned) == 1 and url in warned[0]
    assert run.mode == "online" and run.url == f"{url}/#/p/up/r/{run.id}"
    assert run.get_url() == run.url and run.get_project_url() == f"{url}/#/p/up"
    run.finish()


def test_a_server_that_never_answers_costs_init_timeout_and_the_short_bound(
    tmp_path: Path, no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that accepts connections and never answers (or a host that drops packets)
    holds init() for init_timeout and finish() for the short bound only, not a request's whole
    timeout, and finish() says it could not be reached."""
    import socket

    with socket.socket() as sock:  # the kernel accepts connections; nothing ever answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        run = wisp.init(
            project="up", settings=_online(url, tmp_path, "k", init_timeout=1, upload_timeout=30)
        )
        _log_rows(100)
        t0 = time.monotonic()
        run.finish()
        took = time.monotonic() - t0
    assert took < UNREACHABLE_WAIT + 1, f"finish() waited {took:.1f}s for a silent server"
    err = capsys.readouterr().err
    assert "not uploaded: the server" in err and "could not be reached (no answer)" in err
    assert f"wisp sync {run.dir}" in err


def test_a_server_that_answered_once_gets_the_full_upload_timeout(
    tmp_path: Path, no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The short bound is only for a server that never answered: one that registered the run and then went away is waited for upload_timeout."""
    need_server_package()
    srv = Server(tmp_path, no_auth=True).start()
    run = wisp.init(
        project="up",
        settings=_online(srv.url, tmp_path, srv.key, upload_timeout=UNREACHABLE_WAIT + 2),
    )
    srv.stop()  # registered: it answered once
    _log_rows(500)
    t0 = time.monotonic()
    run.finish()
    took = time.monotonic() - t0
    assert took >= UNREACHABLE_WAIT + 1.5, f"finish() gave up after {took:.1f}s"
    err = capsys.readouterr().err
    assert "not uploaded" in err and f"upload_timeout={UNREACHABLE_WAIT + 2:.3g}s" in err


def _hand_made_run(tmp_path: Path, rows: list[Any]) -> Path:
    run_dir = tmp_path / "wisp" / "run-20240101_000000-handmade"
    run_dir.mkdir(parents=True)
    run = {
        "run_id": "handmade",
        "writer_id": "w1",
        "project": "up",
        "name": "h",
        "tags": [],
        "notes": None,
        "group": None,
        "job_type": None,
        "created_at": 1.0e9,
    }
    data = HEADER + encode_record(RecordType.RUN, json.dumps(run).encode())
    data += encode_record(RecordType.HISTORY, encode_history(rows))
    (run_dir / "run.wisp").write_bytes(data)
    (run_dir / "run.json").write_text(json.dumps({"id": "handmade", "state": "finished"}))
    return run_dir


def test_a_4xx_that_cannot_succeed_is_not_retried(server: Server, tmp_path: Path) -> None:
    """A record the server refuses (422) is set aside after one try; a refused key (403) stops the upload at once."""
    run_dir = _hand_made_run(tmp_path, [[-5, 1.0e9, {"loss": 1.0}]])  # negative step: invalid
    with FlakyProxy(server.url, share=0) as proxy:
        client = ApiClient(proxy.url, server.key)
        up = Uploader(str(run_dir), client, sleep=lambda s: pytest.fail("must not retry"))
        assert up.run(final=lambda: True)
        assert up.rejected == 1
        # PUT run; [run, history] refused; [run] alone; [history] refused; its placeholder
        assert proxy.forwarded == 5
    assert (run_dir / "rejected.jsonl").exists()
    read_only = server.create_key(scope="read")
    run_dir2 = _hand_made_run(tmp_path / "2", [[0, 1.0e9, {"loss": 1.0}]])
    up = Uploader(
        str(run_dir2), ApiClient(server.url, read_only), sleep=lambda s: pytest.fail("retry")
    )
    with pytest.raises(FatalApiError) as info:
        up.run(final=lambda: True)
    assert info.value.status == 403
    assert Cursor.load(str(run_dir2), server.url).offset == len(HEADER)


def test_retry_after_is_honoured(server: Server, tmp_path: Path) -> None:
    """A 429 with Retry-After makes the uploader wait at least that long before retrying."""
    run_dir = _hand_made_run(tmp_path, [[0, 1.0e9, {"loss": 1.0}]])
    with FlakyProxy(server.url, share=1.0, seed=3, retry_after="2.5", codes=(429,)) as proxy:
        delays: list[float] = []

        def sleep(s: float) -> None:
            delays.append(s)
            if len(delays) == 3:
                proxy.share = 0.0

        client = ApiClient(proxy.url, server.key)
        assert Uploader(str(run_dir), client, sleep=sleep).run(final=lambda: True)
    assert len(delays) == 3 and all(d >= 2.5 for d in delays)
    assert server.points("handmade", "loss") == [(0, 1.0)]


def test_backoff_grows_exponentially_with_jitter(tmp_path: Path) -> None:
    """Connection failures back off 0.25 s doubling up to 8 s, each scaled by a 50-100% jitter."""
    run_dir = _hand_made_run(tmp_path, [[0, 1.0e9, {"loss": 1.0}]])
    delays: list[float] = []
    client = ApiClient(f"http://127.0.0.1:{free_port()}", "k", timeout=1)
    clock = iter(range(0, 10_000, 10))
    up = Uploader(
        str(run_dir),
        client,
        sleep=delays.append,
        rand=lambda: 1.0,
        clock=lambda: float(next(clock)),
    )
    with pytest.raises(wisp.errors.RetryableApiError):
        up.run(final=lambda: True, give_up_after=75)
    assert delays[:7] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    up2 = Uploader(str(run_dir), client, rand=lambda: 0.0)
    assert up2._delay(3, None) == 0.5 and up2._delay(1, 5.0) == 5.0


def test_413_halves_the_batch(server: Server, tmp_path: Path) -> None:
    """A batch refused as too large (413) is split until it fits, and everything arrives."""
    rows = [[i, 1.0e9 + i, {"loss": float(i)}] for i in range(200)]
    run_dir = tmp_path / "wisp" / "run-20240101_000000-handmade"
    _hand_made_run(tmp_path, rows[:1])
    with open(run_dir / "run.wisp", "ab") as f:
        for i in range(1, 200):
            f.write(encode_record(RecordType.HISTORY, encode_history([rows[i]])))
    with FlakyProxy(server.url, share=0, max_body=3000) as proxy:
        up = Uploader(
            str(run_dir), ApiClient(proxy.url, server.key), batch_bytes=1 << 20, compress=False
        )
        assert up.run(final=lambda: True)
    assert up.batch_bytes < 1 << 20
    assert server.points("handmade", "loss") == [(i, float(i)) for i in range(200)]


def test_history_goes_on_the_wire_as_its_rows_with_media_hashes(
    server: Server, tmp_path: Path
) -> None:
    """A history record's wire JSON is exactly its decoded rows, media refs uploaded and hashed."""
    import hashlib
    import math
    import urllib.request

    big = 2**53 + 1
    rows: list[Any] = [
        [0, 1.0e9, {"loss": math.nan, "n": big, "img": {"_type": "image", "path": "media/a.png"}}],
        [1, 1.0e9 + 1, {"loss": math.inf, "acc": 0.5}],
        [2, 1.0e9 + 2, {"loss": -math.inf, "n": 2**70, "img": {"_type": "image", "path": "x/.."}}],
        [3, 1.0e9 + 3, {"loss": 0.1, "acc": -0.0}],
        [4, 1.0e9 + 4, {"loss": 1.0, "n": -big, "img": {"_type": "image", "path": "media/a.png"}}],
    ]
    run_dir = _hand_made_run(tmp_path, rows)
    blob = os.urandom(3000)
    (run_dir / "media").mkdir()
    (run_dir / "media" / "a.png").write_bytes(blob)
    sha = hashlib.sha256(blob).hexdigest()
    up = Uploader(str(run_dir), ApiClient(server.url, server.key), compress=False)
    records = list(iter_records(str(run_dir / "run.wisp")))
    assert [r.type for r in records] == [RecordType.RUN, RecordType.HISTORY]
    body = up._encode("w1", 0, records)
    assert up.media_sent == 1
    # what the slow path sent: every row decoded, media refs inside the run dir given a sha256
    want = json.loads(json.dumps({"rows": rows}))
    want["rows"][0][2]["img"]["sha256"] = sha
    want["rows"][4][2]["img"]["sha256"] = sha
    got = json.loads(body)
    assert (got["writer_id"], got["first_seq"]) == ("w1", 0)
    assert repr(got["records"][1]) == repr({"type": RecordType.HISTORY, "data": want})
    with urllib.request.urlopen(f"{server.url}/api/v1/media/{sha}", timeout=10) as resp:
        assert resp.read() == blob
    assert up.run(final=lambda: True)
    assert [v for _, v in server.points("handmade", "acc")] == [0.5, -0.0]


EXIT_SCRIPT = """
import sys, wisp
wisp.init(project="exit", dir=sys.argv[1], settings={
    "server_url": sys.argv[2], "api_key": "k", "init_timeout": 0.2,
    "upload_timeout": 300.0, "exit_timeout": 1.5})
for i in range(100):
    wisp.log({"loss": i * 0.5})
print("logged", flush=True)
"""


def test_a_run_finished_by_the_exit_hook_waits_exit_timeout_not_upload_timeout(
    tmp_path: Path,
) -> None:
    """A run nobody finished stops waiting for an unreachable server within exit_timeout and says `wisp sync` once."""
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(EXIT_SCRIPT)
    unreachable = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path), unreachable],
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert "logged" in proc.stdout
    assert "could not be reached" in proc.stderr, proc.stderr
    assert proc.stderr.count("not uploaded") == 1 and "wisp sync" in proc.stderr, proc.stderr
    assert took < 15, f"exit took {took:.1f}s: upload_timeout (300 s) was not bounded"
    (run_dir,) = (tmp_path / "wisp").glob("run-*")
    assert len(list(wisp.open_run(str(run_dir)).history())) == 100


CTRL_C_SCRIPT = """
import sys, wisp
run = wisp.init(project="ctrlc", dir=sys.argv[1], settings={
    "server_url": sys.argv[2], "api_key": sys.argv[4], "upload_timeout": 120.0,
    "signals": sys.argv[3] == "on", "system_metrics": False, "console": "off", "git": False})
print("registered", flush=True)
sys.stdin.readline()  # the test froze the server
for i in range(2000):
    wisp.log({"loss": i * 0.5})
run.finish()
print("after finish", flush=True)
"""


@pytest.mark.parametrize("signals", ["on", "off"])
def test_ctrl_c_while_finish_waits_says_one_calm_line(tmp_path: Path, signals: str) -> None:
    """Ctrl-C while finish() waits for a server that stopped answering ends the wait with one line (the run is safe on disk, `wisp sync` finishes it), no traceback; the program goes on."""
    import signal
    import subprocess
    import sys

    need_server_package()
    srv = Server(tmp_path, no_auth=True).start()
    script = tmp_path / "train.py"
    script.write_text(CTRL_C_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    cmd = [sys.executable, str(script), str(tmp_path), srv.url, signals, srv.key]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(cmd, **pipes, text=True, env=env) as proc:  # type: ignore[call-overload]
        try:
            first = proc.stdout.readline()
            assert first == "registered\n", first + proc.stderr.read()
            os.kill(srv.proc.pid, signal.SIGSTOP)  # the server accepts and answers nothing
            proc.stdin.write("\n")
            proc.stdin.flush()
            said = ""  # init()'s lines, then the one said after a second of waiting in finish()
            while "waiting up to" not in said and proc.poll() is None:
                said += proc.stderr.readline()
            assert "left, waiting up to 120s" in said, said
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            os.kill(srv.proc.pid, signal.SIGCONT)
            srv.stop()
    assert proc.returncode == 0, err
    assert out == "after finish\n"
    (run_dir,) = (tmp_path / "wisp").glob("run-*")
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "upload interrupted with" in lines[0]
    assert f"the run is safe on disk, `wisp sync {run_dir}` finishes uploading it" in lines[0]
    assert wisp.open_run(str(run_dir)).state == "finished"


def test_a_url_that_is_not_a_wisp_server_is_said_at_once_in_one_line(
    tmp_path: Path, no_run: None
) -> None:
    """init() against a server that is not wisp (python -m http.server answers 501 HTML) fails in under 2 s with one line naming what answered, no HTML page."""
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        t0 = time.monotonic()
        with pytest.raises(FatalApiError) as err:
            wisp.init(project="up", settings=_online(url, tmp_path, "k", init_timeout=30))
        took = time.monotonic() - t0
        httpd.shutdown()
    msg = str(err.value)
    assert took < 2, f"init() took {took:.1f}s to find out"
    assert msg.startswith(f"{url} is not a wisp server: PUT /api/v1/runs/")
    assert "answered HTTP 501 (text/html: Error response)" in msg
    assert "\n" not in msg and "<" not in msg
    assert "e.g. http://host:8080" in msg


def test_a_url_ending_in_api_is_told_the_servers_address(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """A server URL given with the API's path (`.../api`) is refused at once with the address to use instead."""
    with pytest.raises(FatalApiError) as err:
        wisp.init(project="up", settings=_online(f"{server.url}/api", tmp_path, server.key))
    msg = str(err.value)
    assert msg.startswith(f"{server.url}/api is not a wisp server: ")
    assert "answered HTTP 405" in msg
    assert msg.endswith(f"is the server's address without /api: {server.url}")


def test_a_server_that_dies_mid_run_is_said_once_and_finish_stops_waiting_early(
    tmp_path: Path,
    no_run: None,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server that stops mid-run is said once while training goes on; finish() then stops waiting within GONE_WAIT (not upload_timeout) and names `wisp sync`."""
    from wisp._upload._live import GONE_WAIT

    need_server_package()
    srv = Server(tmp_path, no_auth=True).start()
    run = wisp.init(project="up", settings=_online(srv.url, tmp_path, srv.key, upload_timeout=60))
    _log_rows(50)
    srv.stop()  # nothing listens there any more
    for i in range(40):  # training goes on for a while
        _log_rows(5, start=50 + 5 * i)
        time.sleep(0.05)
    t0 = time.monotonic()
    run.finish()
    took = time.monotonic() - t0
    said = [r.getMessage() for r in caplog.records if "is failing" in r.getMessage()]
    assert len(said) == 1, said
    assert f"uploading run {run.id} to {srv.url} is failing" in said[0]
    assert "uploads resume when the server answers again" in said[0]
    assert took < GONE_WAIT + 2, f"finish() waited {took:.1f}s for a server that is gone"
    err = capsys.readouterr().err
    assert err.count("not uploaded") == 1
    assert f"the server {srv.url} stopped answering during the run (ConnectionRefusedError" in err
    assert f"`wisp sync {run.dir}` finishes uploading it" in err
