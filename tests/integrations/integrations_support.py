"""Helpers for the integration tests (a module name unique across the test tree)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def require(module: str) -> ModuleType:
    """Import an optional framework: fail under CI, skip elsewhere, when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed (pip install -e '.[test-integrations]')"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


ROOT = Path(__file__).resolve().parents[2]
#: ``import wandb`` is wisp's compatibility module with this first on PYTHONPATH
WANDB_COMPAT_PATH = os.pathsep.join([str(ROOT / "compat" / "wandb" / "src"), str(ROOT / "src")])


def run_result(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float = 240
) -> dict[str, Any]:
    """Run ``python *args`` in ``cwd`` with no caller WISP_*/WANDB_* variables, wisp quiet
    and local (``WISP_DIR=cwd``), plus ``env``; returns the object of its last ``RESULT``
    line (the process must succeed)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    clean.update(
        PYTHONPATH=str(ROOT / "src"),
        WISP_DIR=str(cwd),
        WISP_CONFIG=str(cwd / "no-user-config.json"),
        WISP_GIT="false",
        WISP_SYSTEM_METRICS="false",
        WISP_CONSOLE="off",
    )
    clean.update(env)
    out = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    result["_stderr"] = out.stderr
    return result
