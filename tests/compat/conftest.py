"""Run the wandb-style scripts in ``scripts/`` as real programs, under wisp or the real wandb.

Each script imports ``wisp as wandb`` (or ``wandb`` when ``COMPAT_IMPL=wandb``), does
what an ordinary wandb script does, and prints one ``RESULT <json>`` line with what it
observed in-process; the tests then read what was recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parent / "scripts"
SRC = Path(__file__).resolve().parents[2] / "src"


def script_env(base: Path, impl: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment: no caller WISP_*/WANDB_* settings, quiet and offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    env.update(
        {
            "PYTHONPATH": str(SRC),
            "COMPAT_IMPL": impl,
            "WISP_CONFIG": str(base / "no-user-config.json"),
            "WISP_GIT": "false",
            "WISP_SYSTEM_METRICS": "false",
            "WISP_SIGNALS": "false",
        }
    )
    if impl == "wandb":
        env.update({"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(base)})
        env.pop("WISP_CONFIG")
    env.update(extra or {})
    return env


def run_script(
    name: str, base: Path, impl: str = "wisp", env: dict[str, str] | None = None, *args: str
) -> dict[str, Any]:
    """Run ``scripts/<name>.py`` in ``base``; return its RESULT object."""
    out = subprocess.run(
        [sys.executable, str(SCRIPTS / f"{name}.py"), *args],
        cwd=base,
        env=script_env(base, impl, env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, out.stdout[-2000:] + out.stderr[-2000:]
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    result["_stderr"] = out.stderr
    return result


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"a/b": 1}`` -> ``{"a": {"b": 1}}`` (wisp stores nested values flattened)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split("/")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def needs_wandb(impl: str) -> None:
    if impl == "wandb":
        pytest.importorskip("wandb")
