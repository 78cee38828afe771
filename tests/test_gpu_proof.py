"""benchmarks/gpu_proof.py keeps working on a machine without CUDA: its CPU checks pass, its
CUDA checks say why they are skipped, and it exits 0 (on a CUDA machine it proves the rest)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_proof.py"


def test_gpu_proof_runs_and_self_checks_on_cpu(tmp_path: Path) -> None:
    """Every check prints one line; none fails; init leaves CUDA uninitialised."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    env["TMPDIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln[:4].strip() in ("ok", "FAIL", "skip")]
    assert len(lines) == 5, out.stdout
    assert "ok  init leaves CUDA uninitialised: before=False after=False" in out.stdout
    assert not [ln for ln in lines if ln.startswith("FAIL")]
    assert "gpu proof: 1 ok, 0 FAIL, 4 skip" in out.stdout
