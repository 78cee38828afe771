"""Helpers for the sweep tests: the CLI as a user runs it, and tiny trial programs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TRAIN = """
import argparse, json, os, sys, time
import wisp
p = argparse.ArgumentParser()
p.add_argument("--x", type=float, default=0.0)
p.add_argument("--y", type=float, default=0.0)
p.add_argument("--opt", default="sgd")
p.add_argument("--steps", type=int, default=3)
p.add_argument("--sleep", type=float, default=0.0)
a = p.parse_args()
run = wisp.init()
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


def create_sweep(base: Path, config: dict[str, Any], project: str = "sweeps") -> str:
    res = run_cli("sweep", str(write_sweep(base, config)), "--project", project, base=base)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def trials(base: Path, sweep_id: str) -> list[dict[str, Any]]:
    from wisp.sweeps._local import LocalStore

    store = LocalStore(str(base))
    try:
        return store.list_trials(sweep_id)
    finally:
        store.close()
