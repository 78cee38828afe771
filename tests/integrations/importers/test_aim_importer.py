"""import_aim on a repository written by the real ``aim`` package, read back with Aim's reader."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp.integrations.importers import import_aim

pytestmark = pytest.mark.timeout(240)

if importlib.util.find_spec("aim") is None:  # imported by the importer, not at collection
    if os.environ.get("CI"):
        pytest.fail("aim is not installed (pip install -e '.[test-importers]')", pytrace=False)
    pytest.skip("aim is not installed", allow_module_level=True)

# Written by aim in a child process (aim starts threads and cleans up at exit); the third
# run is left open, as a killed training script leaves it.
WRITER = r"""
import json, os, sys
import numpy as np
from aim import Distribution, Image, Run, Text

repo, out = sys.argv[1], sys.argv[2]
seen = {}
a = Run(repo=repo, experiment="exp1", system_tracking_interval=None)
# what log_system_params=True writes (it needs pkg_resources, gone from new setuptools)
a["__system_params"] = {"arguments": ["train.py", "--lr"], "env_variables": {"TOKEN": "x"}}
a.name = "first"
a.description = "baseline with two subsets"
a.add_tag("baseline")
a.add_tag("v2")
a["hparams"] = {"lr": 0.01, "batch": 32, "opt": {"name": "adam", "betas": [0.9, 0.99]}}
a["seed"] = 7
for s in range(6):
    a.track(1.0 / (s + 1), name="loss", step=s, context={"subset": "train"})
    if s % 2 == 0:
        a.track(2.0 / (s + 1), name="loss", step=s, context={"subset": "val"}, epoch=s // 2)
        a.track(0.5 + s / 10, name="acc", step=s, context={"subset": "val", "fold": 1}, epoch=s // 2)
    a.track(0.1 * 0.9**s, name="lr", step=s)
for s in (0, 3):
    a.track(Distribution(np.arange(100.0) * (s + 1), bin_count=10), name="w", step=s,
            context={"layer": "fc"})
    a.track(Image(np.full((4, 6, 3), 40 * s, np.uint8), caption=f"at {s}"), name="sample", step=s)
a.track([Image(np.zeros((2, 3), np.uint8)), Image(np.full((2, 3), 255, np.uint8))], name="pair",
        step=5)
a.track(12.5, name="__system__cpu", step=0)
a.track(13.5, name="__system__cpu", step=1)
seen["a"] = a.hash
a.close()
b = Run(repo=repo, experiment="exp2", system_tracking_interval=None)
b["depth"] = 3
for s in (0, 10, 20):
    b.track(float(s), name="x", step=s)
b.track(Text("a note"), name="note", step=0)
seen["b"] = b.hash
b.close()
c = Run(repo=repo, experiment="exp2", system_tracking_interval=None)
c.name = "killed"
c.track(3.0, name="x", step=0)
c.track(2.0, name="x", step=1)
seen["c"] = c.hash
with open(out, "w") as f:
    json.dump(seen, f)
sys.stdout.flush()
os._exit(0)  # no close: the run has no end time
"""


@pytest.fixture(scope="module")
def aim_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One repository written by aim for the module's tests, with its runs' hashes."""
    tmp_path = tmp_path_factory.mktemp("aim")
    repo = tmp_path / "aimrepo"
    repo.mkdir()
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "AIM_UI_TELEMETRY_ENABLED": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(repo), str(tmp_path / "hashes.json")],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    hashes: dict[str, str] = json.loads((tmp_path / "hashes.json").read_text())
    return repo, hashes


def series(run: Any, key: str) -> list[tuple[int, Any]]:
    steps, values = run.scalars(key)
    return list(zip(steps, values, strict=True))


def test_runs_params_metrics_contexts_and_tags_round_trip(
    tmp_path: Path, aim_repo: tuple[Path, dict[str, str]]
) -> None:
    """Every run of a real Aim repository becomes a wisp run with Aim's experiment, name,
    description, tags and params; each (metric, context) keeps every step and value, epochs
    and Aim's system metrics are kept, a run left open is imported crashed, and sequences
    that are not metrics are counted as not imported."""
    repo, hashes = aim_repo
    report = import_aim(repo, dir=tmp_path / "out")
    assert not report.failed and len(report.runs) == 3, report.summary()
    runs = {
        wisp.open_run(d).metadata["imported_from"]["hash"]: wisp.open_run(d) for d in report.runs
    }
    assert set(runs) == set(hashes.values())

    a = runs[hashes["a"]]
    assert (a.id, a.project, a.name, a.state) == (f"aim-{hashes['a']}", "exp1", "first", "finished")
    assert a.metadata["notes"] == "baseline with two subsets"
    assert sorted(a.metadata["tags"]) == ["baseline", "v2"]
    assert a.config == {
        "hparams": {"lr": 0.01, "batch": 32, "opt": {"name": "adam", "betas": [0.9, 0.99]}},
        "seed": 7,
    }
    origin = a.metadata["imported_from"]
    assert origin["source"] == "aim" and origin["archived"] is False
    assert origin["system_params"] == {"arguments": ["train.py", "--lr"]}
    assert origin["contexts"]["acc/fold=1,subset=val"] == {
        "name": "acc", "context": {"subset": "val", "fold": 1},
    }  # fmt: skip
    assert series(a, "loss/subset=train") == [(s, 1.0 / (s + 1)) for s in range(6)]
    assert series(a, "loss/subset=val") == [(s, 2.0 / (s + 1)) for s in (0, 2, 4)]
    assert series(a, "acc/fold=1,subset=val") == [(s, 0.5 + s / 10) for s in (0, 2, 4)]
    lr = series(a, "lr")
    assert [s for s, _ in lr] == list(range(6))
    assert all(math.isclose(v, 0.1 * 0.9**s, rel_tol=1e-12) for s, v in lr)
    assert series(a, "epoch") == [(0, 0), (2, 1), (4, 2)]
    assert not any(k.startswith("__system") for r in a.history() for k in r)
    cpu = [s["values"] for s in a.records["system"]]
    assert cpu == [{"system/cpu": 12.5}, {"system/cpu": 13.5}]
    for step, hist in series(a, "w/layer=fc"):
        assert hist["counts"] == [10] * 10 and len(hist["bins"]) == 11
        assert hist["bins"][0] == 0 and hist["bins"][-1] == pytest.approx(99.0 * (step + 1))
    assert [s for s, _ in series(a, "w/layer=fc")] == [0, 3]
    images = series(a, "sample")
    assert [(s, i["caption"], i["width"], i["height"]) for s, i in images] == [
        (0, "at 0", 6, 4), (3, "at 3", 6, 4),
    ]  # fmt: skip
    from PIL import Image as PILImage

    pixel = PILImage.open(Path(a.dir) / images[1][1]["path"]).convert("RGB").getpixel((0, 0))
    assert pixel == (120, 120, 120)
    [(step, pair)] = series(a, "pair")
    assert step == 5 and pair["_type"] == "images" and len(pair["items"]) == 2
    times = [r["_timestamp"] for r in a.history()]
    assert times == sorted(times) and times[0] >= a.metadata["created_at"] - 1

    b = runs[hashes["b"]]
    assert (b.project, b.state, b.config, b.metadata["tags"]) == (
        "exp2",
        "finished",
        {"depth": 3},
        [],
    )
    assert series(b, "x") == [(0, 0.0), (10, 10.0), (20, 20.0)]
    c = runs[hashes["c"]]
    assert (c.name, c.state) == ("killed", "crashed")
    assert series(c, "x") == [(0, 3.0), (1, 2.0)]
    assert report.points == 6 + 3 + 3 + 6 + 3 + 2
    assert report.left_out == {"Aim texts sequences": 1}


def test_reimport_leaves_unchanged_runs_and_bad_paths_are_named(
    tmp_path: Path, aim_repo: tuple[Path, dict[str, str]]
) -> None:
    """Importing the same repository again imports nothing new; a folder without .aim
    raises RunFileError naming it."""
    repo, _hashes = aim_repo
    first = import_aim(repo, dir=tmp_path / "out")
    again = import_aim(repo / ".aim", dir=tmp_path / "out")
    assert again.runs == [] and sorted(again.unchanged) == sorted(first.runs)
    with pytest.raises(wisp.errors.RunFileError, match="no Aim repository"):
        import_aim(tmp_path / "missing", dir=tmp_path)


def test_an_index_in_use_is_named(tmp_path: Path, aim_repo: tuple[Path, dict[str, str]]) -> None:
    """Runs Aim has not indexed while another process holds the index (aim up) give a
    RunFileError saying so, not runs imported empty."""
    import shutil

    import aimrocks

    repo = tmp_path / "copy"
    shutil.copytree(aim_repo[0], repo)
    index = repo / ".aim" / "meta" / "index"
    shutil.rmtree(index)  # no run indexed (Aim rebuilds a missing index the same way)
    index.mkdir()
    held = aimrocks.DB(str(index), aimrocks.Options(create_if_missing=True), read_only=False)
    try:
        with pytest.raises(wisp.errors.RunFileError, match="is `aim up` or another import"):
            import_aim(repo, dir=tmp_path / "out")
    finally:
        del held
    assert import_aim(repo, dir=tmp_path / "out").runs  # once it is free


def test_wisp_import_aim_command(tmp_path: Path, aim_repo: tuple[Path, dict[str, str]]) -> None:
    """`wisp import aim REPO` imports the repository's runs and says how many."""
    repo, _hashes = aim_repo
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    out = subprocess.run(
        [sys.executable, "-m", "wisp.cli", "import", "aim", str(repo), "--dir", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "aim: imported 3 run(s), 23 points" in out.stdout
    assert len(list((tmp_path / "o" / "wisp").iterdir())) == 3
