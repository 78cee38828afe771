"""Libraries that call wandb, unmodified, through the wandb compatibility module
(compat/wandb built and installed with ``pip install --no-deps --target``, first on
``sys.path`` in a subprocess), compared with each library's own record."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wisp

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).parent / "wandb_libs"


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """compat/wandb built into a wheel and installed into a folder of its own."""
    pytest.importorskip("hatchling", reason="building compat/wandb needs hatchling")
    target = tmp_path_factory.mktemp("shim")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(ROOT / "compat" / "wandb")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert (target / "wandb" / "__init__.py").exists()
    return target


def _need(module: str) -> None:
    """Skip (fail under CI) when a library the subprocess imports is not installed."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed (pip install -e '.[test-integrations]')"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def _env(shim: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(shim), str(ROOT / "src")]),
        WISP_DIR=str(tmp_path),
        WISP_GIT="false",
        WISP_SYSTEM_METRICS="false",
        KERAS_BACKEND="torch",
        PYTHONWARNINGS="ignore",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
        **extra,
    )
    return env


def _run(shim: Path, tmp_path: Path, code: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env=_env(shim, tmp_path, **extra), cwd=tmp_path, capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip


def _script(shim: Path, tmp_path: Path, name: str, **extra: str) -> dict[str, Any]:
    code = (SCRIPTS / name).read_text()
    proc = _run(shim, tmp_path, code, **extra)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads((tmp_path / "result.json").read_text())
    return result


SHIM_CHECKS = """
import importlib.metadata, sys
import wandb
assert importlib.metadata.version("wandb") == "0.30.0+wisp.1"
assert wandb.__name__ == "wisp.wandb_compat" and sys.modules["wandb"] is wandb
import wisp
from wandb.sdk.lib import RunDisabled, telemetry
from wandb.sdk.lib.config_util import ConfigError
from wandb.wandb_run import Run
import wandb.sdk.wandb_run
assert Run is wisp.Run is wandb.sdk.wandb_run.Run
assert issubclass(ConfigError, wisp.UsageError)
assert wandb.sdk.lib.config_util is sys.modules["wisp.wandb_compat.sdk.lib.config_util"]
namespace = {}
exec("from wandb import *", namespace)
exec("from wisp import *", namespace)
assert hasattr(wandb, "config") and hasattr(wandb, "run") and not hasattr(wandb, "no_such_name")
assert wandb.run is None
run = wandb.init(project="shim")
assert wandb.run is run and isinstance(run, Run) and wandb.config is run.config
wandb.config.update({"lr": 0.1, 7: "seven"}, allow_val_change=True)
wandb.run._label(code="test")
with telemetry.context(run=run) as tel:
    tel.feature.anything = True
wandb.log({"loss": 1.5})
wandb.summary["best"] = 2
wandb.termwarn("once", repeat=False)
wandb.termwarn("once", repeat=False)
wandb.termlog("log line")
wandb.require("service")
for make in (lambda: wandb.Artifact("m", type="model"), lambda: wandb.log_artifact("x")):
    try:
        make()
    except wisp.UsageError as e:
        assert "no artifact store" in str(e)
    else:
        raise AssertionError("Artifact should raise")
path = run.dir
wandb.finish()
assert wandb.run is None
print(path)
"""


def test_compat_module_resolves_to_wisp_and_tracks_the_live_run(shim: Path, tmp_path: Path) -> None:
    """With the built shim first on the path, `import wandb` is wisp's compatibility module
    with wandb's version metadata, the submodules libraries import, live run/config/summary,
    star-import safety, and a clear UsageError for artifacts; the data lands in the run."""
    proc = _run(shim, tmp_path, SHIM_CHECKS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("wandb: WARNING once") == 1
    assert "wandb: log line" in proc.stderr
    data = wisp.open_run(proc.stdout.strip().splitlines()[-1])
    assert data.config["lr"] == 0.1 and data.config["7"] == "seven"
    assert "allow_val_change" not in data.config
    assert data.scalars("loss") == ([0], [1.5])
    assert data.summary["best"] == 2


def test_install_as_wandb_without_the_distribution(tmp_path: Path) -> None:
    """wisp.install_as_wandb() makes `import wandb` and its submodules resolve to wisp even
    where the real wandb is installed, and refuses once the real wandb was imported."""
    code = (
        "import wisp, sys\n"
        "mod = wisp.install_as_wandb()\n"
        "import wandb, wandb.sdk.lib.config_util\n"
        "from wandb.wandb_run import Run\n"
        "assert wandb is mod and Run is wisp.Run, wandb\n"
        "assert wandb.sdk.lib.config_util.ConfigError is wisp.UsageError\n"
        "r = wandb.init(project='x'); assert wandb.run is r; wandb.finish()\n"
        "assert wisp.install_as_wandb() is mod\n"
    )
    env = _env(Path(tmp_path), tmp_path)
    env["PYTHONPATH"] = str(ROOT / "src")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    real = "import importlib.util, sys\n"
    real += "if importlib.util.find_spec('wandb') is None: sys.exit(0)\n"
    real += "import wandb, wisp\ntry:\n    wisp.install_as_wandb()\nexcept wisp.UsageError as e:\n"
    real += "    assert 'already imported' in str(e); sys.exit(0)\nsys.exit(3)\n"
    proc = subprocess.run([sys.executable, "-c", real], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_lightning_wandb_logger_matches_csv_logger(shim: Path, tmp_path: Path) -> None:
    """Lightning's WandbLogger records every train_loss/val_loss value at the step the
    CSVLogger beside it records, the hyperparameters without `allow_val_change`, and
    watch() histograms although training_step calls only self.net."""
    _need("lightning")
    result = _script(shim, tmp_path, "lightning_script.py")
    data = wisp.open_run(result["run_dir"])
    with open(result["csv"]) as f:
        rows = list(csv.DictReader(f))
    for key in ("train_loss", "val_loss"):
        want = [(int(r["step"]), float(r[key])) for r in rows if r.get(key)]
        steps, values = data.scalars(key, x="defined")
        assert want and list(zip(steps, values, strict=True)) == want, key
    assert data.step_metric("train_loss") == "trainer/global_step"
    assert data.config["lr"] == 0.05 and "allow_val_change" not in data.config
    steps, _ = data.scalars("gradients/net.0.weight", x="trainer/global_step")
    assert len(steps) >= 5  # 24 training steps, log_freq=4
    assert data.scalars("parameters/net.2.bias")[0]
    assert data.state == "finished"


@pytest.mark.slow
def test_lightning_log_model_stops_with_a_clear_error_and_keeps_the_rows(
    shim: Path, tmp_path: Path
) -> None:
    """WandbLogger(log_model="all") stops at the first checkpoint with wisp's UsageError
    naming the way out, and every value logged before it is in the run, as in the CSV."""
    _need("lightning")
    code = (SCRIPTS / "lightning_script.py").read_text()
    proc = _run(shim, tmp_path, code, TEST_LOG_MODEL="all")
    assert proc.returncode != 0
    assert "wisp.errors.UsageError: wandb.Artifact()" in proc.stderr
    assert "log_model=False" in proc.stderr
    (run_file,) = tmp_path.glob("wisp/*/run.wisp")
    data = wisp.open_run(run_file)
    assert data.state == "failed"
    (csv_file,) = tmp_path.glob("csv/*/metrics.csv")
    with open(csv_file) as f:
        rows = list(csv.DictReader(f))
    for key in ("train_loss", "val_loss"):
        want = [(int(r["step"]), float(r[key])) for r in rows if r.get(key)]
        assert want and list(zip(*data.scalars(key, x="defined"), strict=True)) == want, key


@pytest.mark.slow
def test_transformers_trainer_matches_log_history(shim: Path, tmp_path: Path) -> None:
    """Trainer(report_to=["wandb"]) records every log_history value at its global step
    (train/*, eval/*), the one-off totals in the summary, and the model config with its
    integer id2label keys stringified."""
    _need("transformers")
    result = _script(shim, tmp_path, "transformers_script.py")
    data = wisp.open_run(result["run_dir"])
    assert len(result["expected"]) >= 10
    for key, step, value in result["expected"]:
        steps, values = data.scalars(key, x="train/global_step")
        assert (step, value) in list(zip(steps, values, strict=True)), (key, step, value)
    for key in {k for k, _, _ in result["expected"]}:
        want = [(s, v) for k, s, v in result["expected"] if k == key]
        got = list(zip(*data.scalars(key, x="defined"), strict=True))
        assert got == want, key
    for key, value in result["summary"].items():
        assert data.summary[key] == value, key
    assert data.config["id2label"] == {"0": "even", "1": "odd"}
    assert data.config["model/num_parameters"] > 0
    assert data.config["learning_rate"] == 1e-3


@pytest.mark.slow
def test_transformers_log_model_fails_before_training(shim: Path, tmp_path: Path) -> None:
    """WANDB_LOG_MODEL=end (artifacts, not supported yet) stops with wisp's UsageError
    naming the way out before the first training step, not mid-training."""
    _need("transformers")
    code = (SCRIPTS / "transformers_script.py").read_text()
    proc = _run(shim, tmp_path, code, WANDB_LOG_MODEL="end")
    assert proc.returncode != 0
    assert "wisp.errors.UsageError" in proc.stderr and "WANDB_LOG_MODEL=false" in proc.stderr
    assert "'loss'" not in proc.stdout and not (tmp_path / "result.json").exists()


@pytest.mark.slow
def test_keras_metrics_logger_matches_history(shim: Path, tmp_path: Path) -> None:
    """WandbMetricsLogger records each epoch's loss/mae/val_* exactly as Keras' History
    has them, at epoch/epoch 0..2, and one batch row per training batch."""
    _need("keras")
    result = _script(shim, tmp_path, "keras_script.py")
    data = wisp.open_run(result["run_dir"])
    history = result["history"]
    assert {"loss", "mae", "val_loss", "val_mae"} <= set(history)
    for key, values in history.items():
        steps, got = data.scalars(f"epoch/{key}", x="epoch/epoch")
        assert steps == [0, 1, 2], key
        assert got == pytest.approx(values, rel=1e-6), key
    assert len(data.scalars("batch/loss")[0]) == 3 * result["steps"]


@pytest.mark.slow
def test_sb3_wandb_callback_matches_progress_csv(shim: Path, tmp_path: Path) -> None:
    """wandb.integration.sb3.WandbCallback records every value of SB3's own progress.csv at
    its timestep (global_step), the algorithm in config, policy gradient histograms, and
    the saved model in the run's files."""
    _need("stable_baselines3")
    result = _script(shim, tmp_path, "sb3_script.py")
    data = wisp.open_run(result["run_dir"])
    with open(result["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    compared = 0
    for key in rows[0]:
        want = [(int(r["time/total_timesteps"]), float(r[key])) for r in rows if r[key]]
        steps, values = data.scalars(key, x="defined")
        assert steps == [s for s, _ in want], key
        assert values == pytest.approx([v for _, v in want], rel=1e-6), key
        compared += len(want)
    assert compared > 40 and data.step_metric("train/loss") == "global_step"
    assert data.config["algo"] == "PPO" and data.config["n_steps"] == 64
    assert data.config["policy_type"] == "MlpPolicy"
    assert data.scalars("gradients/action_net.weight")[0]
    assert (Path(result["run_dir"]) / "files" / "model.zip").is_file()
