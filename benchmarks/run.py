"""Run every benchmark (``make bench``), each in a fresh interpreter, and print its table.

python benchmarks/run.py            # all bench_*.py files
python benchmarks/run.py sdk media  # only bench_sdk.py and bench_media.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    wanted = set(argv)
    files = sorted(HERE.glob("bench_*.py"))
    if wanted:
        files = [f for f in files if f.stem.removeprefix("bench_") in wanted]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    failed = []
    for f in files:
        print(f"\n### {f.name}", flush=True)
        if subprocess.run([sys.executable, str(f)], env=env).returncode != 0:
            failed.append(f.name)
    if failed:
        print(f"\nbenchmarks that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
