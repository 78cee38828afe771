"""A real `wisp server` process for the CLI tests that talk to one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.cli._helpers import wisp_cli


def need_server() -> None:
    try:
        missing = find_spec("wisp.server") is None or find_spec("uvicorn") is None
    except ImportError:
        missing = True
    if missing:
        if os.environ.get("CI"):
            pytest.fail("the wisp server (wisp.server + the server extra) is required in CI")
        pytest.skip("wisp.server not in this build yet")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real `wisp server` process on SQLite; yields (url, write key)."""
    need_server()
    db = f"sqlite:///{tmp_path / 'server.db'}"
    res = wisp_cli(
        "server", "keys", "create", "--db", db, "--scope", "write", "--json", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    key = json.loads(res.stdout)["key"]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    env["WISP_CONFIG"] = str(tmp_path / "wisp-config.json")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wisp.cli",
            "server",
            "--port",
            str(port),
            "--db",
            db,
            "--media-dir",
            str(tmp_path / "media"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/openapi.json", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    pytest.fail(f"wisp server did not start: {err[-2000:]}")
                time.sleep(0.1)
        yield url, key
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stderr:
            proc.stderr.close()
