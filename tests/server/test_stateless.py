"""Stateless servers (docs/server.md, "Deployment"): three ``wisp server`` processes on one
PostgreSQL database and one media directory, behind Debian's nginx on loopback.

One of them is killed (SIGKILL) while four clients upload: the clients retry through nginx
to the others and every point and every histogram arrives exactly once.  Rate limits and
sessions hold across the processes: they live in the database, not in a process.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wisp
from tests._procs import stop
from tests.server.conftest import PG_HOST
from wisp.testing import Server, free_port, temporary_postgres_database

pytestmark = pytest.mark.slow

RUNS, STEPS, HIST_EVERY = 4, 6000, 50


def _nginx() -> str:
    """nginx on PATH, Debian's, or the one `make nginx` unpacked beside this interpreter."""
    venv = os.path.join(os.path.dirname(sys.executable), "nginx")
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", venv) if os.access(p, os.X_OK)), ""
    )
    if not found:
        pytest.fail("nginx is required (Debian's package: `make nginx` unpacks it into .venv)")
    return found


class Nginx:
    """Debian's nginx as the test user, with its own prefix and config, on a loopback port."""

    def __init__(self, base: Path, upstreams: list[int]) -> None:
        self.base = base
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"):
            (base / d).mkdir(parents=True, exist_ok=True)
        servers = "\n".join(
            f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=60s;" for p in upstreams
        )
        user = f"user {getpass.getuser()};" if os.geteuid() == 0 else ""
        (base / "nginx.conf").write_text(
            f"""{user}
worker_processes 1;
daemon off;
pid {base}/nginx.pid;
error_log {base}/logs/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {base}/body;
  proxy_temp_path {base}/proxy;
  fastcgi_temp_path {base}/fastcgi;
  uwsgi_temp_path {base}/uwsgi;
  scgi_temp_path {base}/scgi;
  client_max_body_size 0;
  upstream wisp {{
{servers}
    keepalive 16;
  }}
  server {{
    listen 127.0.0.1:{self.port};
    location / {{
      proxy_pass http://wisp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_next_upstream off;  # the clients retry (to the processes still up), not nginx
      proxy_connect_timeout 2s;
    }}
  }}
}}
"""
        )
        self.proc = subprocess.Popen(
            [
                _nginx(),
                "-p",
                str(base),
                "-c",
                str(base / "nginx.conf"),
                "-e",
                str(base / "logs/error.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/api/openapi.json", timeout=2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not start: {(base / 'logs/error.log').read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        stop(self.proc, 10)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[list[Server], Nginx]]:
    """Three server processes (one database, one media directory) behind nginx."""
    _nginx()
    with temporary_postgres_database(PG_HOST) as db:
        first = Server(tmp_path / "srv", db=db, args=["--key-rate", "0"])
        servers = [first] + [
            Server(tmp_path / "srv", db=db, key=first.key, args=["--key-rate", "0"])
            for _ in range(2)
        ]
        proxy = None
        try:
            for s in servers:
                s.start()
            proxy = Nginx(tmp_path / "nginx", [s.port for s in servers])
            yield servers, proxy
        finally:
            if proxy is not None:
                proxy.stop()
            for s in servers:
                s.stop()


def _record(d: Path, i: int) -> None:
    run = wisp.init(project="fleet", id=f"run{i}", dir=str(d), mode="offline")
    for step in range(STEPS):
        row: dict[str, Any] = {"loss": step * 0.5 + i, "acc": float(step % 7)}
        if step % HIST_EVERY == 0:
            row["h"] = wisp.Histogram([float(step), float(i)])
        wisp.log(row, step=step)
    run.finish()


def test_killing_a_server_mid_ingest_loses_and_duplicates_nothing(
    cluster: tuple[list[Server], Nginx], tmp_path: Path
) -> None:
    """SIGKILL one of three servers while four uploads run through nginx: the clients retry
    to the other two and every point and histogram arrives exactly once."""
    from wisp._upload._transport import ApiClient
    from wisp._upload._uploader import Uploader

    servers, proxy = cluster
    dirs = [tmp_path / f"run{i}" for i in range(RUNS)]
    for i, d in enumerate(dirs):
        _record(d, i)
    ups = []
    for d in dirs:
        (run_dir,) = [p for p in (d / "wisp").iterdir() if p.is_dir() and "run" in p.name]
        client = ApiClient(proxy.url, servers[0].key)
        ups.append(Uploader(str(run_dir), client, batch_bytes=8 * 1024, backoff=(0.05, 0.5)))
    errors: list[BaseException] = []

    def upload(up: Uploader) -> None:
        try:
            up.run(final=lambda: True, give_up_after=60)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    threads = [threading.Thread(target=upload, args=(u,)) for u in ups]
    for t in threads:
        t.start()
    total = sum(u.pending_bytes() for u in ups)
    while sum(u.pending_bytes() for u in ups) > total * 3 // 4:  # a quarter is in
        assert any(t.is_alive() for t in threads), errors
        time.sleep(0.01)
    assert sum(u.pending_bytes() for u in ups) > total // 4, "too fast to kill mid-ingest"
    victim = servers[1]
    assert victim.proc is not None
    victim.proc.kill()  # mid-ingest, no goodbye
    victim.proc.wait(10)
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert all(u.done.is_set() for u in ups)
    assert sum(u.retries for u in ups) > 0  # the kill was felt (502s), and retried through
    live = servers[0]
    for i, up in enumerate(ups):
        assert up.key is not None
        run = live.get(f"/projects/fleet/runs/run{i}")
        assert run["state"] == "finished" and run["key"] == up.key
        assert live.points(up.key, "loss") == [(s, s * 0.5 + i) for s in range(STEPS)]
        assert live.points(up.key, "acc") == [(s, float(s % 7)) for s in range(STEPS)]
        media = live.get(f"/runs/{up.key}/media?key=h&limit=100000")["media"]
        assert sorted(m["step"] for m in media) == list(range(0, STEPS, HIST_EVERY))


def test_rate_limits_and_sessions_are_shared_by_the_processes(tmp_path: Path) -> None:
    """A key's request budget is one budget across three processes behind nginx, and a
    session made on one process is honoured by the others."""
    _nginx()
    from wisp.server import users_add

    with temporary_postgres_database(PG_HOST) as db:
        args = ["--key-rate", "2"]  # bursts of 4, then 2 a second
        first = Server(tmp_path / "srv", db=db, args=args)
        servers = [first] + [
            Server(tmp_path / "srv", db=db, key=first.key, args=args) for _ in range(2)
        ]
        proxy = None
        try:
            for s in servers:
                s.start()
            proxy = Nginx(tmp_path / "nginx", [s.port for s in servers])
            codes = []
            started = time.monotonic()
            for _ in range(30):
                req = urllib.request.Request(
                    f"{proxy.url}/api/v1/projects", headers={"Authorization": f"Bearer {first.key}"}
                )
                try:
                    with urllib.request.urlopen(req, timeout=10) as resp:
                        codes.append(resp.status)
                except urllib.error.HTTPError as e:
                    codes.append(e.code)
                    e.close()
            elapsed = time.monotonic() - started
            allowed = codes.count(200)
            # one bucket: the burst plus what refilled meanwhile (three buckets: ~3x that)
            assert allowed <= 4 + 2 * elapsed + 1, (codes, elapsed)
            assert codes.count(429) >= 30 - allowed and allowed >= 4
            users_add("ann", db=db, password="correct horse battery")
            import json

            login = urllib.request.Request(
                f"{proxy.url}/api/v1/auth/login",
                data=json.dumps({"name": "ann", "password": "correct horse battery"}).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(login, timeout=10) as resp:
                cookie = resp.headers.get_all("Set-Cookie")
            session = next(c.split(";", 1)[0] for c in cookie if c.startswith("wisp_session="))
            for _ in range(6):  # round robin: every process sees the session
                req = urllib.request.Request(
                    f"{proxy.url}/api/v1/auth/me", headers={"Cookie": session}
                )
                with urllib.request.urlopen(req, timeout=10) as resp:
                    assert json.loads(resp.read())["user"] == "ann"
        finally:
            if proxy is not None:
                proxy.stop()
            for s in servers:
                s.stop()
