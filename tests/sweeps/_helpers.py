"""Helpers for the sweep tests: the CLI as a user runs it, and tiny trial programs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests._procs import stop

TRAIN = """
import argparse, json, os, sys, time
import wisp
p = argparse.ArgumentParser()
p.add_argument("--x", type=float, default=0.0)
p.add_argument("--y", type=float, default=0.0)
p.add_argument("--opt", default="sgd")
p.add_argument("--steps", type=int, default=3)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--by_start", type=int, default=0)
a = p.parse_args()
run = wisp.init()
if a.by_start:  # x is the trial's place in the agent's order (1, 2, ...): each is worse
    started = os.path.join(os.environ["WISP_DIR"], "started")
    os.makedirs(started, exist_ok=True)
    a.x = 1.0 + len(os.listdir(started))
    open(os.path.join(started, run.id), "w").close()
if os.path.exists(os.path.join(os.environ["WISP_DIR"], "slow")):
    time.sleep(120)
for i in range(a.steps):
    wisp.log({"loss": (a.x - 1) ** 2 + (a.y + 1) ** 2 + 1.0 / (i + 1)})
    time.sleep(a.sleep)
with open(os.path.join(os.environ["WISP_DIR"], "argv-" + run.id + ".json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "config": dict(run.config)}, f)
wisp.finish()
"""


def env_for(base: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    e.update(
        WISP_DIR=str(base),
        WISP_CONFIG=str(base / "no-config.json"),
        WISP_GIT="false",
        WISP_SYSTEM_METRICS="false",
        WISP_CONSOLE="off",
    )
    e.update(extra or {})
    return e


def wisp_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "wisp.cli", *args]


def run_cli(
    *args: str, base: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        wisp_cmd(*args),
        cwd=base,
        env=env_for(base, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def write_sweep(base: Path, config: dict[str, Any]) -> Path:
    import json

    (base / "train.py").write_text(TRAIN)
    path = base / "sweep.json"
    path.write_text(json.dumps({"program": "train.py", **config}))
    return path


def run_agents(sweep_id: str, n: int, cwd: Path, env: dict[str, str], timeout: float = 240) -> None:
    """``n`` concurrent ``wisp agent`` processes on ``sweep_id``; each must exit 0 (its
    stderr is the failure's message); every one is stopped and reaped on every path."""
    agents = [
        subprocess.Popen(
            wisp_cmd("agent", sweep_id),
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    try:
        for a in agents:
            _out, err = a.communicate(timeout=timeout)
            assert a.returncode == 0, err
    finally:
        for a in agents:
            stop(a)


def create_sweep(
    base: Path, config: dict[str, Any], project: str = "sweeps", env: dict[str, str] | None = None
) -> str:
    res = run_cli("sweep", str(write_sweep(base, config)), "--project", project, base=base, env=env)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def at(sweep_id: str) -> str:
    """The API path of an online sweep named ``project/id`` (what ``wisp sweep`` prints)."""
    from wisp._protocol import project_path

    project, _, bare = sweep_id.rpartition("/")
    return f"{project_path(project)}/sweeps/{bare}"


def trials(base: Path, sweep_id: str) -> list[dict[str, Any]]:
    from wisp.sweeps._local import LocalStore

    store = LocalStore(str(base))
    try:
        return store.list_trials(sweep_id)
    finally:
        store.close()


class Server:
    """A real wisp server process on loopback (reads need no key; writes need ``key``)."""

    def __init__(self, tmp_path: Path, db_url: str | None = None) -> None:
        import socket

        from wisp.server import keys_create

        self.db_url = db_url or f"sqlite:///{tmp_path / 'server.db'}"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.key = keys_create("write", "sweep tests", db=self.db_url)[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp_path / "server.log"
        code = (
            "import sys; from wisp.server import serve; serve(db=sys.argv[1], "
            "media_dir=sys.argv[2], host='127.0.0.1', port=int(sys.argv[3]), no_auth=True, "
            "log_level='warning')"
        )
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, self.db_url, str(tmp_path / "media"), str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        import time
        import urllib.request

        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                urllib.request.urlopen(f"{self.url}/api/v1/projects", timeout=1).read()
                break
            except OSError:
                assert time.monotonic() < deadline, self.log.read_text()
                time.sleep(0.05)

    def env(self) -> dict[str, str]:
        return {"WISP_SERVER_URL": self.url, "WISP_API_KEY": self.key}

    def get(self, path: str) -> Any:
        import json
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/api/v1{path}", timeout=30) as resp:
            return json.loads(resp.read())

    def send(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        from wisp.testing import send_json

        return send_json(self.url, self.key, method, path, body)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
