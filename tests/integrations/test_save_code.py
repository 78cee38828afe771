"""``init(save_code=True)`` saves the main script into the run's files, as wandb does."""

from __future__ import annotations

from pathlib import Path

import wisp

from .integrations_support import run_result


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
        "print('RESULT ' + json.dumps({'dir': run.dir}))\n"
    )
    result = run_result(["-W", "error", "jobs/train.py"], tmp_path, {})
    run_dir = result["dir"]
    saved = Path(run_dir) / "files" / "code" / "jobs" / "train.py"
    assert saved.read_text() == script.read_text()
    files = wisp.open_run(run_dir).records["file"]
    assert [(f["name"], f["kind"]) for f in files] == [("code/jobs/train.py", "code")]
    assert "ignores" not in result["_stderr"], result["_stderr"]
