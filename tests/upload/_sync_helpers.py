"""Test helpers for sync tests: a faulty proxy, a training script, latency bounds.

The real server process is :class:`wisp.testing.Server`.  The proxy stands in front
of it and answers 500 or 429 to a share of requests (before or after forwarding
them), the one failure a real server can't be asked to produce.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


def need_server_package() -> None:
    """Skip without the server extra, except in CI where that is a failure."""
    try:
        import uvicorn  # noqa: F401

        import wisp.server  # noqa: F401
    except ImportError as exc:
        msg = f"the wisp server is not installed here ({exc}): pip install -e '.[test-sync]'"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


class FlakyProxy:
    """Forwards to ``upstream``; fails ``share`` of requests with 500 or 429 (seeded)."""

    def __init__(
        self,
        upstream: str,
        share: float = 1 / 3,
        seed: int = 1,
        *,
        retry_after: str = "0",
        codes: tuple[int, ...] = (429, 500),
        max_body: int | None = None,
    ) -> None:
        self.upstream = upstream
        self.share = share
        self.retry_after = retry_after
        self.codes = codes
        self.max_body = max_body
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.failed = 0
        self.forwarded = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy.lock:
                    roll = proxy.rng.random()
                    fail = roll < proxy.share
                    after = proxy.rng.random() < 0.5  # fail after the server applied it
                    code = proxy.codes[int(proxy.rng.random() * len(proxy.codes))]
                if proxy.max_body is not None and len(body) > proxy.max_body:
                    return self._fail(413)
                if fail and not after:
                    return self._fail(code)
                req = urllib.request.Request(
                    proxy.upstream + self.path, data=body if body else None, method=self.command
                )
                for k, v in self.headers.items():
                    if k.lower() not in ("host", "content-length", "connection"):
                        req.add_header(k, v)
                try:
                    with urllib.request.urlopen(req, timeout=30) as resp:
                        status, hdrs, data = resp.status, resp.headers, resp.read()
                except urllib.error.HTTPError as err:
                    status, hdrs, data = err.code, err.headers, err.read()
                with proxy.lock:
                    proxy.forwarded += 1
                if fail:
                    return self._fail(code)
                self.send_response(status)
                for k, v in hdrs.items():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _fail(self, code: int) -> None:
                with proxy.lock:
                    proxy.failed += 1
                body = json.dumps({"error": {"code": "injected", "message": "injected"}}).encode()
                self.send_response(code)
                if code == 429:
                    self.send_header("Retry-After", proxy.retry_after)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_HEAD = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FlakyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


TRAIN_SCRIPT = """
import os, sys, time, wisp
n, sleep_every = int(sys.argv[1]), float(sys.argv[2])
run = wisp.init(project="sync-test", id=sys.argv[3], dir=sys.argv[4],
                settings={"flush_interval": 0.05})
print("started", run.dir, flush=True)
for i in range(n):
    wisp.log({"loss": i * 0.25, "i": i})
    if sleep_every and i % 100 == 99:
        time.sleep(sleep_every)
print("logged", flush=True)
run.finish()
"""


def start_training(
    tmp_path: Path, run_id: str, n: int, sleep_every: float, env: dict[str, str]
) -> subprocess.Popen[str]:
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    return subprocess.Popen(
        [sys.executable, str(script), str(n), str(sleep_every), run_id, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def latencies_ok(lat: list[float]) -> None:
    """A loose bound on log() latency: the tight figures live in benchmarks/bench_sync.py."""
    lat = sorted(lat)
    p50 = lat[len(lat) // 2]
    p99 = lat[int(len(lat) * 0.99)]
    assert p50 < 0.001, f"log() p50 {p50 * 1e6:.0f} us"
    assert p99 < 0.02, f"log() p99 {p99 * 1e6:.0f} us"
