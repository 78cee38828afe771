"""import_wandb on runs written by the real wandb package in offline mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import wisp
from wisp.integrations.importers import import_wandb

from ..integrations_support import require

require("wandb")

pytestmark = pytest.mark.timeout(180)

SCRIPT = """
import math
{import_line}

run = wandb.init(project="mig", name="same-script", config={{"lr": 0.1, "opt": {{"beta": 0.9}}}},
                 tags=["a"], notes="n")
for step in range(6):
    wandb.log({{"loss": math.exp(-step), "val/acc": step / 10}})
wandb.log({{"late": 1.5}}, step=9)
wandb.summary["best"] = 0.5
wandb.finish({exit_arg})
"""


def run_script(tmp_path: Path, import_line: str, exit_code: int = 0) -> None:
    script = tmp_path / f"train_{abs(hash(import_line))}_{exit_code}.py"
    exit_arg = f"exit_code={exit_code}" if exit_code else ""
    script.write_text(SCRIPT.format(import_line=import_line, exit_arg=exit_arg))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "WISP_"))},
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(tmp_path),
        "WANDB_SILENT": "true",
        "WISP_DIR": str(tmp_path / "native"),
        "WISP_GIT": "false",
    }
    subprocess.run(
        [sys.executable, str(script)],
        check=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        capture_output=True,
    )


def test_import_matches_the_same_script_run_with_wisp(tmp_path: Path) -> None:
    """A script run under wandb and imported reads back with the same config, steps, values
    and summary as the same script run with `import wisp as wandb`; times, identity and
    system metrics come from the wandb run."""
    run_script(tmp_path, "import wandb")
    run_script(tmp_path, "import wisp as wandb")
    (dest,) = import_wandb(tmp_path / "wandb", dir=tmp_path / "imported")
    imported = wisp.open_run(dest)
    (native_dir,) = (tmp_path / "native" / "wisp").iterdir()
    native = wisp.open_run(native_dir)

    assert imported.state == native.state == "finished"
    assert imported.project == "mig" and imported.name == "same-script"
    assert imported.metadata["tags"] == ["a"] and imported.metadata["notes"] == "n"
    assert imported.metadata["imported_from"]["source"] == "wandb"
    assert imported.config == native.config == {"lr": 0.1, "opt": {"beta": 0.9}}
    for key in ("loss", "val/acc", "late"):
        steps, values = imported.scalars(key)
        assert (steps, pytest.approx(values)) == native.scalars(key), key
    assert imported.scalars("late")[0] == [9]
    assert imported.summary["best"] == native.summary["best"] == 0.5
    assert imported.summary["loss"] == pytest.approx(native.summary["loss"])
    times = [row["_timestamp"] for row in imported.history()]
    assert times == sorted(times) and times[0] >= imported.metadata["created_at"]
    assert imported.finish is not None
    assert imported.finish["finished_at"] >= times[-1]
    system = imported.records.get("system", [])
    assert system and all(k.startswith("system/") for s in system for k in s["values"])


def test_failed_run_and_reimport(tmp_path: Path) -> None:
    """A wandb run that exits with code 1 is imported as failed, and importing it again
    returns the same directory instead of a second copy."""
    run_script(tmp_path, "import wandb", exit_code=1)
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    (first,) = import_wandb([run_dir], dir=tmp_path / "out")
    data = wisp.open_run(first)
    assert data.state == "failed" and data.finish is not None
    assert data.finish["exit_code"] == 1
    assert import_wandb(run_dir, dir=tmp_path / "out") == [first]
    assert len(list((tmp_path / "out" / "wisp").iterdir())) == 1


def test_torn_file_imports_its_readable_prefix_as_crashed(tmp_path: Path) -> None:
    """A .wandb file cut short (a killed process) imports what precedes the damage, without
    a finish record, so the run reads as crashed."""
    run_script(tmp_path, "import wandb")
    (src,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    data = src.read_bytes()
    torn = tmp_path / "run-torn.wandb"
    torn.write_bytes(data[: len(data) * 2 // 3])
    (dest,) = import_wandb(torn, dir=tmp_path / "out")
    run = wisp.open_run(dest)
    assert run.state == "crashed" and run.finish is None
    steps, _ = run.scalars("loss")
    assert steps == list(range(len(steps))) and len(steps) >= 1


def test_bad_inputs_are_named(tmp_path: Path) -> None:
    """A missing path, a folder without runs and a non-wandb file raise RunFileError
    naming them."""
    with pytest.raises(wisp.errors.RunFileError, match="no wandb run file"):
        import_wandb(tmp_path / "missing", dir=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(wisp.errors.RunFileError, match="no run-"):
        import_wandb(tmp_path / "empty", dir=tmp_path)
    bogus = tmp_path / "run-x.wandb"
    bogus.write_bytes(b"not a wandb file at all")
    with pytest.raises(wisp.errors.RunFileError, match="not a wandb run file"):
        import_wandb(bogus, dir=tmp_path)
