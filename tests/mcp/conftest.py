"""Runs for the agent-tool tests: a folder of real offline runs made by the SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: two runs of project "agents": lr 0.1 (overfits: val rises after step 200) and lr 0.01
MAKE_RUNS = r"""
import math, sys, wisp
n = int(sys.argv[1])
for lr, seed in ((0.1, 1), (0.01, 1)):
    run = wisp.init(project="agents", config={"lr": lr, "seed": seed, "opt": {"name": "adam"}},
                    tags=["base"], settings={"system_metrics": False, "git": False})
    for s in range(n):
        val = 1 / (s + 1) + lr * 3 + (0.5 if s > n * 2 // 3 else 0.0)
        wisp.log({"train/loss": 1 / (s + 1) + lr, "val/loss": val, "lr": lr}, step=s)
    if lr == 0.1:
        wisp.log({"bad": float("nan")}, step=n)
        wisp.alert(title="loss high", text="val/loss went up", level="WARN")
    print(f"run {run.id} lr={lr}")
    run.finish()
"""


def make_runs(folder: Path, steps: int = 300) -> None:
    """Write the two runs into ``folder`` with a real training script."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    env["WISP_MODE"] = "offline"
    env["WISP_CONFIG"] = str(folder / "no-config.json")
    subprocess.run(
        [sys.executable, "-c", MAKE_RUNS, str(steps)],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    make_runs(tmp_path)
    return tmp_path
