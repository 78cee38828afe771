"""import_wandb on runs written by the real wandb package in offline mode."""

from __future__ import annotations

import json
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
    """A wandb run that exits with code 1 is imported as failed, importing it again returns
    the same directory instead of a second copy, and an interrupted import is redone."""
    run_script(tmp_path, "import wandb", exit_code=1)
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    (first,) = import_wandb([run_dir], dir=tmp_path / "out")
    data = wisp.open_run(first)
    assert data.state == "failed" and data.finish is not None
    assert data.finish["exit_code"] == 1
    assert import_wandb(run_dir, dir=tmp_path / "out") == [first]
    assert len(list((tmp_path / "out" / "wisp").iterdir())) == 1

    # an import cut short (run.json still "running", the run file torn) is done again
    meta = Path(first, "run.json")
    meta.write_text(meta.read_text().replace('"failed"', '"running"'))
    with open(Path(first, "run.wisp"), "r+b") as f:
        f.truncate(100)
    (again,) = import_wandb(run_dir, dir=tmp_path / "out")
    redone = wisp.open_run(again)
    assert redone.state == "failed" and redone.scalars("loss") == data.scalars("loss")


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


MEDIA_SCRIPT = """
import numpy as np, wandb
for r in range(2):
    run = wandb.init(project="media", name=f"m{r}")
    with open(f"notes{r}.txt", "w") as f:
        f.write(f"notes of run {r}")
    wandb.save(f"notes{r}.txt", policy="now")
    for step in range(3):
        pixels = np.full((6, 8, 3), 40 * step + r, dtype=np.uint8)
        wandb.log({
            "img": wandb.Image(pixels, caption=f"s{step}"),
            "pair": [wandb.Image(pixels), wandb.Image(255 - pixels)],
            "tbl": wandb.Table(columns=["a", "b"], data=[[step, "x"], [step + 1, None]]),
            "h": wandb.Histogram([1, 2, 2, 3, step]),
            "loss": 1.0 / (step + 1),
        })
    wandb.finish()
"""


def _wandb_values(wandb_file: Path) -> list[dict[str, object]]:
    """The history rows as wandb's own protobuf reader decodes them (nested keys joined)."""
    from wandb.proto import wandb_internal_pb2 as pb

    from wisp.integrations.importers._wandb import iter_wandb_records
    from wisp.integrations.importers._wandb_media import nest

    rows = []
    for raw in iter_wandb_records(str(wandb_file)):
        rec = pb.Record()
        rec.ParseFromString(raw)
        if rec.WhichOneof("record_type") == "history":
            rows.append(nest(rec.history.item))
    return rows


def test_media_and_files_of_many_runs(tmp_path: Path) -> None:
    """Images, galleries, tables, histograms and saved files of two offline runs import in one
    call; every image's bytes, table cell and histogram equals what wandb wrote; importing
    again changes nothing."""
    script = tmp_path / "media.py"
    script.write_text(MEDIA_SCRIPT)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "WISP_"))},
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(tmp_path),
        "WANDB_SILENT": "true",
    }
    subprocess.run(
        [sys.executable, str(script)],
        check=True,
        timeout=150,
        env=env,
        cwd=tmp_path,
        capture_output=True,
    )
    from wisp.integrations.importers._wandb import import_wandb_report

    report = import_wandb_report(tmp_path / "wandb", tmp_path / "out")
    assert len(report.runs) == 2 and not report.failed and not report.left_out, report.summary()
    assert report.files == 2
    for run_dir in report.runs:
        run = wisp.open_run(run_dir)
        origin = Path(run.metadata["imported_from"]["path"])
        files = origin.parent / "files"
        truth = _wandb_values(origin)
        img_steps, imgs = run.images("img")
        pair_steps, pairs = run.images("pair")
        assert img_steps == pair_steps == [0, 1, 2]
        h_steps, hists = run.histograms("h")
        assert h_steps == [0, 1, 2]
        for i, row in enumerate(truth):
            assert Path(imgs[i][0]).read_bytes() == (files / row["img"]["path"]).read_bytes()
            assert [Path(p).read_bytes() for p in pairs[i]] == [
                (files / f).read_bytes() for f in row["pair"]["filenames"]
            ]
            table = json.loads((files / row["tbl"]["path"]).read_text())
            assert run.table("tbl", step=i) == [
                dict(zip(table["columns"], r, strict=True)) for r in table["data"]
            ]
            assert hists[i].edges.tolist() == row["h"]["bins"]
            assert hists[i].counts.tolist() == row["h"]["values"]
        name = run.name.replace("m", "notes") + ".txt"
        (saved,) = [p for p in Path(run_dir, "files").iterdir()]
        assert saved.name == name and saved.read_text() == (files / name).read_text()
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    again = import_wandb_report(tmp_path / "wandb", tmp_path / "out")
    assert again.runs == [] and len(again.unchanged) == 2
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before
