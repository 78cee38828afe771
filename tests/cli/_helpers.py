"""Shared helpers for the CLI tests: run `python -m wisp.cli` and make real runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def wisp_cli(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in a clean environment rooted in ``cwd``."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    e["WISP_CONFIG"] = str(cwd / "wisp-config.json")
    e.pop("FORCE_COLOR", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "wisp.cli", *args],
        cwd=cwd,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=stdin,
    )


def make_run(base: Path, body: str = "", **init: Any) -> Path:
    """Create a real run under ``base`` by running a script; returns its directory."""
    opts = {"project": "proj", "dir": str(base), **init}
    script = "\n".join(
        [
            "import wisp",
            'run = wisp.init(settings={"system_metrics": False, "console": "off", "git": False},'
            f" **{opts!r})",
            textwrap.dedent(body).strip(),
            "run.finish()",
            "print(run.dir)",
        ]
    )
    res = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "WISP_CONFIG": "/nonexistent"},
    )
    assert res.returncode == 0, res.stderr
    return Path(res.stdout.strip().splitlines()[-1])
