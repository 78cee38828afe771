"""The ``wandb`` compatibility module's names: submodules as attributes, wandb.errors and
wandb.util, plot_table (as Ultralytics calls it), Molecule, Graph, controller, and
optuna-integration's and Ultralytics' callbacks run unmodified through ``import wandb``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp import wandb_compat as wandb

from .integrations_support import WANDB_COMPAT_PATH, run_result

SCRIPTS = Path(__file__).resolve().parent / "wandb_scripts"


def run_as_wandb(code: str, cwd: Path, script: Path | None = None) -> dict[str, Any]:
    """Run ``code`` (or ``script``) where ``import wandb`` is the compatibility module;
    returns its ``RESULT`` object."""
    args = [str(script)] if script is not None else ["-c", code]
    return run_result(args, cwd, {"PYTHONPATH": WANDB_COMPAT_PATH})


def test_submodules_resolve_as_attributes(tmp_path: Path) -> None:
    """After a bare ``import wandb``, wandb.sdk, wandb.apis.public, wandb.util and
    wandb.errors are there without importing them, as in wandb."""
    code = """
import json, wandb, wisp
seen = {
    "run_class": wandb.sdk.wandb_run.Run is wisp.Run,
    "api": wandb.apis.public.Api is wisp.Api,
    "errors": issubclass(wandb.errors.CommError, wandb.errors.Error),
    "id": len(wandb.util.generate_id()),
    "names": [hasattr(wandb, n) for n in ("plot_table", "Molecule", "Graph", "controller")],
}
import wandb.errors, wandb.util, wandb.apis.public
seen["same"] = wandb.errors is __import__("sys").modules["wandb.errors"]
print("RESULT " + json.dumps(seen))
"""
    seen = run_as_wandb(code, tmp_path)
    del seen["_stderr"]
    assert seen == {
        "run_class": True,
        "api": True,
        "errors": True,
        "id": 8,
        "names": [True, True, True, True],
        "same": True,
    }


def test_util_helpers() -> None:
    """wandb.util's helpers behave as wandb's."""
    util = wandb.util
    assert util.make_artifact_name_safe("my model/v1:best") == "my_model_v1_best"
    assert util.get_module("no_such_module_here") is None
    with pytest.raises(wandb.errors.Error, match="needed"):
        util.get_module("no_such_module_here", required="needed")
    assert util.json_friendly({1, 2})[1] is True
    assert util.to_forward_slash_path("a\\b") == "a/b"


def test_plot_table_as_ultralytics_calls_it(tmp_path: Path) -> None:
    """Ultralytics' curve call (``plot_table("wandb/area-under-curve/v0", Table, fields,
    string_fields)``) logs a curve chart with its titles; an unknown preset is refused."""
    run = wisp.init(project="ul")
    table = wandb.Table(data=[["mean", 0.5, 0.1], ["cat", 0.4, 0.2]], columns=["class", "y", "x"])
    chart = wandb.plot_table(
        "wandb/area-under-curve/v0",
        table,
        fields={"x": "x", "y": "y", "class": "class"},
        string_fields={"title": "PR", "x-axis-title": "Recall", "y-axis-title": "Precision"},
    )
    wandb.log({"curves/PR": chart}, commit=False)
    run.finish()
    value = next(r["curves/PR"] for r in wisp.open_run(run.dir).history() if "curves/PR" in r)
    assert value["chart"] == "curve" and value["fields"] == {"x": "x", "y": "y", "class": "class"}
    assert value["strings"]["x-axis-title"] == "Recall" and value["rows"] == 2
    with pytest.raises(wisp.UsageError, match="custom Vega spec"):
        wandb.plot_table("me/my-spec/v3", table, {"x": "x"})


def test_molecule_and_graph_are_logged(tmp_path: Path) -> None:
    """A Molecule file is stored byte for byte with its format; a Graph inline."""
    pdb = tmp_path / "water.pdb"
    pdb.write_text(
        "HETATM    1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00           O\n"
    )
    run = wisp.init(project="media")
    graph = wandb.Graph(format="torch")
    a = graph.add_node(name="fc1", class_name="Linear")
    b = graph.add_node(name="fc2", class_name="Linear")
    graph.add_edge(a, b)
    with open(pdb) as f:
        from_file = wandb.Molecule(f, caption="open file")
    wandb.log({"mol": wandb.Molecule(str(pdb), caption="water"), "mol2": from_file, "g": graph})
    run.finish()
    row = next(wisp.open_run(run.dir).history())
    mol = row["mol"]
    assert mol["_type"] == "molecule" and mol["format"] == "pdb" and mol["caption"] == "water"
    assert (Path(run.dir) / mol["path"]).read_bytes() == pdb.read_bytes()
    assert row["mol2"]["path"] == mol["path"]
    assert row["g"]["edges"] == [[0, 1]] and row["g"]["nodes"][1]["name"] == "fc2"
    with pytest.raises(wisp.UsageError, match="unsupported file type"):
        wandb.Molecule(str(tmp_path / "x.txt"))


def test_controller_creates_the_sweep(tmp_path: Path) -> None:
    """wandb.controller(config).run() creates the sweep wisp's agents then run."""
    pytest.importorskip("optuna")
    ctl = wandb.controller(
        {"method": "random", "parameters": {"lr": {"min": 0.1, "max": 1.0}}}, project="sw"
    )
    ctl.configure_metric("loss", goal="minimize")
    ctl.run()
    assert ctl.sweep_id is not None and ctl.done() is False
    seen: list[float] = []
    wisp.agent(ctl.sweep_id, lambda: seen.append(wisp.init().config["lr"]), count=2)
    assert len(seen) == 2 and all(0.1 <= v <= 1.0 for v in seen)


@pytest.mark.slow
def test_optuna_integration_callback(tmp_path: Path) -> None:
    """optuna-integration's WeightsAndBiasesCallback runs unmodified: one run per trial with
    the trial's params in config and value logged, or every trial in one run."""
    pytest.importorskip("optuna_integration")
    seen = run_as_wandb("", tmp_path, SCRIPTS / "optuna_callback.py")
    runs = [wisp.open_run(d) for d in sorted((tmp_path / "wisp").iterdir())]
    multi = [r for r in runs if r.project == "optuna-multi"]
    assert len(multi) == 3
    for trial in seen["multi"]:
        run = next(r for r in multi if r.name.startswith(f"trial/{trial['number']}/"))
        assert run.config["x"] == trial["x"] and run.config["direction"] == ["MINIMIZE"]
        assert "multi" in run.metadata["tags"]
        [row] = list(run.history())
        assert row["value"] == trial["value"] and row["x"] == trial["x"]
    [single] = [r for r in runs if r.project == "optuna-single"]
    rows = list(single.history())
    assert [r["_step"] for r in rows] == [0, 1, 2]
    assert [r["loss"] for r in rows] == [t["value"] for t in seen["single"]]


def _ultralytics_path() -> Path:
    """The folder `make` installs ultralytics into (.venv/ultralytics, off sys.path: its
    torchvision is PyPI's CUDA build); ``TEST_ULTRALYTICS_PATH`` names another."""
    folder = Path(os.environ.get("TEST_ULTRALYTICS_PATH") or Path(sys.prefix) / "ultralytics")
    if not (folder / "ultralytics" / "__init__.py").exists():
        message = f"ultralytics is not installed in {folder} (make ultralytics)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return folder


@pytest.mark.slow
def test_ultralytics_callback_logs_epochs_plots_curves_and_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ultralytics' wandb callback, unmodified, driven as its trainer drives it: every
    epoch's losses, learning rates and metrics at their epoch, the model info, its plots
    as images, each Precision-Recall/F1/P/R curve of its own DetMetrics as a curve chart
    whose table is the callback's interpolation of that curve, best.pt as a model
    artifact aliased best, and the run finished (its teardown finish is a no-op)."""
    import numpy as np

    monkeypatch.setenv("WISP_CACHE_DIR", str(tmp_path / "cache"))  # the Api reads it here
    path = os.pathsep.join([str(_ultralytics_path()), WANDB_COMPAT_PATH])
    env = {"PYTHONPATH": path, "WISP_CACHE_DIR": str(tmp_path / "cache")}
    seen = run_result([str(SCRIPTS / "ultralytics_callback.py")], tmp_path, env)
    data = wisp.open_run(seen["run_dir"])
    assert (data.id, data.name, data.project, data.state) == (
        seen["run_id"], "train", "ul-proj", "finished",
    )  # fmt: skip
    assert {k: data.config[k] for k in seen["args"]} == seen["args"]
    for epoch, want in enumerate(seen["expected"], start=1):
        for key, value in want.items():
            steps, values = data.scalars(key, x="epoch")
            assert value in [v for s, v in zip(steps, values, strict=True) if s == epoch], key
    first = next(data.history())
    assert first["model/parameters"] == seen["params"] and first["epoch"] == 1
    assert first["model/speed_PyTorch(ms)"] == 1.25 and first["model/GFLOPs"] >= 0
    for key, size, epoch in (("results", (8, 6), 2), ("PR_curve", (10, 10), 2)):
        steps, images = data.scalars(key, x="epoch")
        assert steps == [epoch] and (images[0]["width"], images[0]["height"]) == size, key
    names = seen["names"]
    for curve in seen["curves"]:
        x, y = np.array(curve["x"]), np.array(curve["y"])
        x_new = np.linspace(x[0], x[-1], 100).round(5)
        want = [("mean", np.interp(x_new, x, y.mean(axis=0)).round(3), x_new)]
        want += [(names[i], np.interp(x_new, x, yi), x_new) for i, yi in enumerate(y)]
        rows = data.table(f"curves/{curve['name']}")
        assert len(rows) == 100 * (1 + len(names))
        for n, (cls, ys, xs) in enumerate(want):
            part = rows[n * 100 : (n + 1) * 100]
            assert [r["class"] for r in part] == [cls] * 100
            assert [r["y"] for r in part] == pytest.approx(ys.round(3), abs=1.001e-3)
            assert [r["x"] for r in part] == pytest.approx(xs.round(3), abs=1.001e-3)
        chart = data.scalars(f"curves/{curve['name']}")[1][-1]
        assert chart["chart"] == "curve" and chart["fields"] == {
            "x": "x",
            "y": "y",
            "class": "class",
        }
        assert chart["strings"] == {
            "title": curve["name"], "x-axis-title": curve["titles"][0],
            "y-axis-title": curve["titles"][1],
        }  # fmt: skip
    api = wisp.Api(dir=tmp_path / "train")
    art = api.artifact(f"ul-proj/run_{data.id}_model:best")
    assert art.type == "model"
    root = Path(art.download(root=str(tmp_path / "dl")))
    assert (root / "best.pt").read_bytes() == Path(seen["best"]).read_bytes()
