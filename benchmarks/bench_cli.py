"""CLI start-up and ``wisp doctor`` wall time.

``wisp --help`` in this environment, and ``wisp doctor`` both here (where torch
may be installed: its probe imports torch) and in a fresh virtual environment
holding only wisp (the issue's "< 2 s" target), median of 3 runs each.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")


def timed(cmd: list[str], env: dict[str, str], cwd: str, n: int = 3) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(n):
        t = time.perf_counter()
        code = subprocess.run(
            cmd, env=env, cwd=cwd, capture_output=True, check=False, timeout=120
        ).returncode
        times.append(time.perf_counter() - t)
    return statistics.median(times), code


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    with tempfile.TemporaryDirectory() as tmp:
        env["WISP_CONFIG"] = os.path.join(tmp, "none.json")
        t, _ = timed([sys.executable, "-m", "wisp.cli", "--help"], env, tmp)
        print(f"wisp --help: {t * 1000:.0f} ms")
        t, code = timed([sys.executable, "-m", "wisp.cli", "doctor"], env, tmp)
        print(f"wisp doctor (this environment): {t:.2f} s (exit {code})")
        venv = os.path.join(tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        fresh = {**env, "PYTHONPATH": SRC}
        t, code = timed([py, "-m", "wisp.cli", "doctor"], fresh, tmp)
        print(f"wisp doctor (fresh venv, only wisp): {t:.2f} s (exit {code}; target < 2 s)")


if __name__ == "__main__":
    main()
