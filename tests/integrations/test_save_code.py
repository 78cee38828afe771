"""``init(save_code=True)`` saves the main script into the run's files, as wandb does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import wisp

ROOT = Path(__file__).resolve().parents[2]


def test_save_code_saves_the_main_script(tmp_path: Path) -> None:
    """A script run with init(save_code=True) finds itself in files/code/ (its path relative
    to the working directory), recorded as a FILE of kind code, and no warning says the
    argument is ignored."""
    script = tmp_path / "jobs" / "train.py"
    script.parent.mkdir()
    script.write_text(
        "import json, wisp\n"
        "run = wisp.init(project='code', save_code=True)\n"
        "run.finish()\n"
        "print('DIR ' + run.dir)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    env.update(PYTHONPATH=str(ROOT / "src"), WISP_DIR=str(tmp_path), WISP_GIT="false")
    env.update(WISP_SYSTEM_METRICS="false", WISP_CONFIG=str(tmp_path / "none.json"))
    out = subprocess.run(
        [sys.executable, "-W", "error", "jobs/train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir = next(ln[4:] for ln in out.stdout.splitlines() if ln.startswith("DIR "))
    saved = Path(run_dir) / "files" / "code" / "jobs" / "train.py"
    assert saved.read_text() == script.read_text()
    files = wisp.open_run(run_dir).records["file"]
    assert [(f["name"], f["kind"]) for f in files] == [("code/jobs/train.py", "code")]
    assert "ignores" not in out.stderr, json.dumps(out.stderr)
