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


def _make_n(target: str, venv: Path) -> str:
    """What `make TARGET` would run on a fresh checkout (dry run, a venv that does not exist)."""
    out = subprocess.run(
        ["make", "-n", "-C", str(README.parent), target, f"VENV={venv}", "PY=python3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_make_demo_installs_the_runtime_extras_only(tmp_path: Path) -> None:
    """`make demo` installs wisp with the extras its example runs (server, numpy, video), never the dev stack, and the README says how to run `wisp` after it."""
    plan = _make_n("demo", tmp_path / "venv")
    installs = [line for line in plan.splitlines() if "pip install" in line and " -e " in line]
    assert installs == [
        f"{tmp_path / 'venv'}/bin/python -m pip install -q -e '.[server,numpy,video]'"
    ]
    assert "examples/train.py" in plan and f"{tmp_path / 'venv'}/bin/wisp ui" in plan
    assert ".venv/bin/wisp ui" in README.read_text()  # no activation needed


def test_make_test_says_what_it_installs_and_enables_no_service(tmp_path: Path) -> None:
    """`make test` names the system packages before installing them and unpacks nginx instead of installing (and enabling) its service."""
    plan = _make_n("test", tmp_path / "venv")
    assert "installing Debian packages chromium chromium-driver" in plan
    assert "apt-get download -qq nginx" in plan and "dpkg-deb -x" in plan
    assert not re.search(r"apt-get install[^\n]*nginx|systemctl (enable|start)", plan)
