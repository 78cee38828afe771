"""The README's quick start works as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs_and_records_a_run(tmp_path: Path) -> None:
    """The first python block of the README runs in a fresh interpreter and leaves a finished run."""
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    out = subprocess.run(
        [sys.executable, "-c", block.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WISP_DIR": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert "val/acc" in out.stdout
    (run_dir,) = (tmp_path / "wisp").iterdir()
    assert (run_dir / "run.wisp").stat().st_size > 0
