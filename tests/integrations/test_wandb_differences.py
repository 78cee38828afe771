"""docs/integrations/wandb.md lists what differs from wandb, and every difference it lists
names a test that exercises it; the differences no other test covers are exercised here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import wisp

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations" / "wandb.md"
_TEST = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


_STATUSES = ("differs", "not supported", "accepted, no effect")


def _rows() -> list[str]:
    """Every table row whose status is not "supported", and every "What differs" bullet."""
    out = []
    section = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("#"):
            section = line
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row = line.startswith("|") and len(cells) >= 3 and cells[1] in _STATUSES
        if row or (section == "### What differs" and line.startswith("- ")):
            out.append(line)
        elif section == "### What differs" and line.startswith("  ") and out:
            out[-1] += " " + line.strip()  # a bullet's continuation lines
    return out


def test_every_documented_difference_names_an_existing_test() -> None:
    """Each row that differs (or is not supported, or accepted with no effect) names at
    least one test, and each named test exists."""
    rows = _rows()
    assert len(rows) >= 50
    for line in rows:
        refs = _TEST.findall(line)
        assert refs, f"no test named for: {line[:120]}"
        for path, name in refs:
            text = (ROOT / path).read_text()
            assert re.search(rf"def {name}\(", text), f"{path}::{name} does not exist"


def test_calls_wisp_does_not_have_are_refused() -> None:
    """log(sync=...) is a TypeError, and the model-registry methods do not exist on a run."""
    run = wisp.init(project="diff")
    with pytest.raises(TypeError):
        wisp.log({"x": 1.0}, sync=True)  # type: ignore[call-arg]
    for name in ("link_artifact", "log_model", "link_model"):
        assert not hasattr(run, name)
    run.finish()


def test_history_holds_numbers_only(tmp_path: Path) -> None:
    """A string and an image logged beside a number are left out of history and
    scan_history; open_run reads them."""
    run = wisp.init(project="diff", dir=str(tmp_path))
    import numpy as np

    run.log({"loss": 0.5, "phase": "warmup", "img": wisp.Image(np.zeros((2, 2), np.uint8))})
    run.finish()
    with wisp.Api(dir=tmp_path) as api:
        back = api.run(f"diff/{run.id}")
        assert list(back.scan_history()) == [{"_step": 0, "loss": 0.5}]
        assert back.history(pandas=False) == [{"_step": 0, "loss": 0.5}]
    row = next(wisp.open_run(run.dir).history())
    assert row["phase"] == "warmup" and row["img"]["_type"] == "image"


def test_local_history_x_axis_is_the_step(tmp_path: Path) -> None:
    """Over a local folder history() takes x_axis="_step" only, and says so."""
    run = wisp.init(project="diff", dir=str(tmp_path))
    run.log({"loss": 0.5})
    run.finish()
    with wisp.Api(dir=tmp_path) as api, pytest.raises(wisp.UsageError, match="_step"):
        api.run(f"diff/{run.id}").history(x_axis="_timestamp")


def test_compat_module_names_that_differ() -> None:
    """RunDisabled matches no run (disabled runs are wisp.Run); telemetry, _label,
    require and setup are accepted and do nothing, teardown finishes the run; a wandb
    integration wisp does not provide is an ImportError."""
    import importlib

    from wisp import wandb_compat as wandb

    run = wisp.init(project="diff", mode="disabled")
    assert isinstance(run, wandb.sdk.wandb_run.Run)
    assert not isinstance(run, wandb.sdk.lib.RunDisabled)
    run.finish()
    run = wisp.init(project="diff")
    with wandb.sdk.lib.telemetry.context(run=run) as tel:
        tel.feature.anything = True
    run._label(code="x", repo="y")
    assert wandb.require("core") is None and wandb.setup() is None
    assert wisp.run is run
    wandb.teardown()
    assert wisp.run is None and wisp.open_run(run.dir).state == "finished"
    with pytest.raises(ImportError):
        importlib.import_module("wisp.wandb_compat.integration.xgboost")


def test_save_live_copies_the_file_once(tmp_path: Path) -> None:
    """save(policy="live") copies the file once, as it is when the writer thread copies it
    (right after the call); later changes are not copied (wandb re-uploads them)."""
    notes = tmp_path / "notes.txt"
    notes.write_text("first")
    run = wisp.init(project="diff", dir=str(tmp_path / "runs"))
    run.save(str(notes), base_path=str(tmp_path), policy="live")
    assert run.barrier(30)  # the copy is made on the writer thread, right after the call
    notes.write_text("changed later")
    run.finish()
    assert (Path(run.dir) / "files" / "notes.txt").read_text() == "first"


def test_config_values_change_without_allow_val_change() -> None:
    """A config value changes without allow_val_change (wandb raises ConfigError)."""
    run = wisp.init(project="diff", config={"lr": 0.1})
    run.config.update({"lr": 0.2})
    run.config["lr"] = 0.3
    run.finish()
    assert wisp.open_run(run.dir).config["lr"] == 0.3


def test_image_arguments_wisp_ignores() -> None:
    """Image's grouping, classes, file_type and normalize are accepted and change nothing:
    the image stored is the one stored without them."""
    import numpy as np

    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4)
    run = wisp.init(project="diff")
    run.log({"plain": wisp.Image(pixels)})
    extra = {"grouping": 2, "classes": [{"id": 1, "name": "a"}], "file_type": "jpg"}
    run.log({"with": wisp.Image(pixels, normalize=False, **extra)})
    run.finish()
    rows = list(wisp.open_run(run.dir).history())
    plain, other = rows[0]["plain"], rows[1]["with"]
    assert (Path(run.dir) / plain["path"]).read_bytes() == (
        Path(run.dir) / other["path"]
    ).read_bytes()
    assert (other["width"], other["height"]) == (4, 3)


def test_table_cells_other_than_images_are_refused() -> None:
    """A Table cell holding Audio is a UsageError naming the cell (wandb stores it)."""
    import numpy as np

    audio = wisp.Audio(np.zeros(80, np.float32), sample_rate=8000)
    with pytest.raises(wisp.UsageError, match="column 'clip', row 0 is Audio"):
        wisp.Table(columns=["id", "clip"], data=[[1, audio]])


def test_restore_reads_local_runs_only(tmp_path: Path) -> None:
    """restore() of a run this machine does not hold is a UsageError naming the folder it
    searched (wandb downloads the file from its cloud)."""
    with pytest.raises(wisp.UsageError, match=r"has no saved file 'model\.h5' under"):
        wisp.restore("model.h5", run_path="team/proj/elsewhere", root=str(tmp_path))
