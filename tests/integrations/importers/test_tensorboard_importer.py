"""import_tensorboard on event files written by torch.utils.tensorboard."""

from __future__ import annotations

from pathlib import Path

import pytest

import wisp
from wisp.integrations.importers import import_tensorboard

from ..integrations_support import require

require("tensorboard")
np = require("numpy")
tb = require("torch.utils.tensorboard")

pytestmark = pytest.mark.timeout(120)


def write_logs(logdir: Path) -> None:
    for run, scale in (("exp/a", 1.0), ("exp/b", 2.0)):
        w = tb.SummaryWriter(str(logdir / run))
        for step in range(4):
            w.add_scalar("loss", scale / (step + 1), step)
            w.add_scalar("lr", 0.1, step)
            if step % 2 == 0:
                w.add_histogram("weights", np.arange(100, dtype=np.float64) * (step + 1), step)
                img = np.zeros((3, 4, 6), dtype=np.uint8)
                img[0] = 40 * step
                w.add_image("sample", img, step)
        w.close()


def test_scalars_histograms_and_images_become_a_run_per_folder(tmp_path: Path) -> None:
    """Each event-file folder becomes one finished run whose rows hold the scalars,
    histograms (all 100 values binned) and PNG images of each step."""
    write_logs(tmp_path / "logs")
    dirs = import_tensorboard(tmp_path / "logs", dir=tmp_path / "out")
    runs = {wisp.open_run(d).name: wisp.open_run(d) for d in dirs}
    assert set(runs) == {"exp/a", "exp/b"}
    a = runs["exp/a"]
    assert a.state == "finished" and a.project == "logs"
    assert a.metadata["imported_from"]["source"] == "tensorboard"
    steps, losses = a.scalars("loss")
    assert steps == [0, 1, 2, 3]
    assert losses == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
    assert runs["exp/b"].scalars("loss")[1][0] == pytest.approx(2.0)
    hsteps, hists = a.scalars("weights")
    assert hsteps == [0, 2]
    for step, h in zip(hsteps, hists, strict=True):
        assert h["_type"] == "histogram" and sum(h["counts"]) == 100
        assert len(h["bins"]) == len(h["counts"]) + 1 <= 513
        assert h["bins"] == sorted(h["bins"])
        assert h["bins"][0] == 0 and h["bins"][-1] == pytest.approx(99 * (step + 1))
    isteps, images = a.scalars("sample")
    assert isteps == [0, 2]
    for img in images:
        assert img["_type"] == "image" and (img["width"], img["height"]) == (6, 4)
        assert (Path(a.dir) / img["path"]).read_bytes().startswith(b"\x89PNG")
    assert images[0]["path"] != images[1]["path"]
    times = [r["_timestamp"] for r in a.history()]
    assert times == sorted(times) and times[0] >= a.metadata["created_at"] - 1


def test_reimport_is_idempotent_and_bad_logdir_is_named(tmp_path: Path) -> None:
    """Importing the same logdir twice returns the same run directories; a missing or empty
    logdir raises RunFileError naming it."""
    write_logs(tmp_path / "logs")
    first = import_tensorboard(tmp_path / "logs", dir=tmp_path / "out", project="p")
    assert import_tensorboard(tmp_path / "logs", dir=tmp_path / "out") == first
    assert wisp.open_run(first[0]).project == "p"
    with pytest.raises(wisp.errors.RunFileError, match="missing"):
        import_tensorboard(tmp_path / "missing", dir=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(wisp.errors.RunFileError, match="no TensorBoard event files"):
        import_tensorboard(tmp_path / "empty", dir=tmp_path)


def test_wisp_import_tensorboard_command(tmp_path: Path) -> None:
    """`wisp import tensorboard LOGDIR` converts the logs into runs that `wisp ls` then lists."""
    import json
    import os
    import subprocess
    import sys

    write_logs(tmp_path / "logs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    cli = [sys.executable, "-m", "wisp.cli"]
    out = subprocess.run(
        [*cli, "import", "tensorboard", str(tmp_path / "logs"), "--dir", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "imported 2 run(s)" in out.stdout
    listed = subprocess.run(
        [*cli, "ls", "--dir", str(tmp_path / "out"), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert sorted(r["name"] for r in json.loads(listed.stdout)["runs"]) == ["exp/a", "exp/b"]
