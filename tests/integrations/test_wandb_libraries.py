"""Libraries that call wandb, unmodified, through the wandb compatibility module
(compat/wandb built and installed with ``pip install --no-deps --target``, first on
``sys.path`` in a subprocess), compared with each library's own record."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp.errors import ArtifactError

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
        WISP_CACHE_DIR=str(tmp_path / "cache"),
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


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real wisp server (SQLite) that the library subprocess and ``reader`` log to."""
    from wisp.testing import Server

    with Server(tmp_path / "server") as srv:
        monkeypatch.setenv("WISP_SERVER_URL", srv.url)
        monkeypatch.setenv("WISP_API_KEY", srv.key)
        monkeypatch.setenv("WISP_MODE", "online")
        monkeypatch.setenv("WISP_CACHE_DIR", str(tmp_path / "reader-cache"))
        yield srv


def _online(server: Any) -> dict[str, str]:
    return {"WISP_SERVER_URL": server.url, "WISP_API_KEY": server.key, "WISP_MODE": "online"}


@pytest.fixture
def reader(server: Any, tmp_path: Path) -> Any:
    """``reader(project, ref)``: that version fetched from the server by an online run
    with an empty cache of its own, downloaded; returns (artifact, folder)."""
    runs: list[Any] = []

    def fetch(project: str, ref: str) -> tuple[Any, Path]:
        if not runs:
            runs.append(wisp.init(project=project, dir=str(tmp_path / "reader")))
        art = runs[0].use_artifact(f"{project}/{ref}")
        root = tmp_path / "downloads" / ref.replace(":", "-")
        return art, Path(art.download(str(root)))

    yield fetch
    for run in runs:
        run.finish()


SHIM_CHECKS = """
import importlib.metadata, sys
import wandb
assert importlib.metadata.version("wandb") == "0.30.0+wisp.1"
assert wandb.__name__ == "wisp.wandb_compat" and sys.modules["wandb"] is wandb
import wisp
from wisp.errors import ArtifactError
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
assert wandb.Artifact is wisp.Artifact and wandb.use_artifact is wisp.use_artifact
with open("weights.bin", "wb") as f:
    f.write(b"w" * 100)
wandb.log_model("weights.bin", aliases=["best"]).wait(30)
wandb.link_model("weights.bin", "Registry Model").wait(30)
art = wandb.use_artifact(f"run-{run.id}-weights.bin:best", type="model")
assert art.type == "model" and [e.path for e in art.files()] == ["weights.bin"], art
path = run.dir
wandb.finish()
assert wandb.run is None
print(path)
"""


def test_compat_module_resolves_to_wisp_and_tracks_the_live_run(shim: Path, tmp_path: Path) -> None:
    """With the built shim first on the path, `import wandb` is wisp's compatibility module
    with wandb's version metadata, the submodules libraries import, live run/config/summary,
    star-import safety, wisp's artifacts with log_model/link_model; the data lands in the run."""
    proc = _run(shim, tmp_path, SHIM_CHECKS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("wandb: WARNING once") == 1
    assert "wandb: log line" in proc.stderr
    assert proc.stderr.count("no model registry") == 1
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
def test_lightning_log_model_all_logs_each_checkpoint_as_written(
    shim: Path, tmp_path: Path, server: Any, reader: Any
) -> None:
    """WandbLogger(log_model="all") logs every checkpoint as a version of model-<id> the
    moment it is written (byte-equal to the file, although Lightning later deletes the
    worse ones), with the best one aliased `best`, and training runs to the end."""
    _need("lightning")
    result = _script(shim, tmp_path, "lightning_script.py", TEST_LOG_MODEL="all", **_online(server))
    data = wisp.open_run(result["run_dir"])
    assert data.state == "finished"
    written = result["written"]
    assert len(written) == 3  # one per epoch
    name = f"model-{data.id}"
    for n, (filename, sha) in enumerate(written):
        art, root = reader("lit", f"{name}:v{n}")
        assert art.type == "model" and art.metadata["original_filename"] == filename
        assert _sha(root / "model.ckpt") == sha, filename
    assert len(result["kept"]) == 2  # save_top_k=2: Lightning deleted the first file
    art, root = reader("lit", f"{name}:best")
    assert (root / "model.ckpt").read_bytes() == Path(result["best"]).read_bytes()


@pytest.mark.slow
def test_lightning_log_model_true_logs_the_kept_checkpoints_at_the_end(
    shim: Path, tmp_path: Path, server: Any, reader: Any
) -> None:
    """WandbLogger(log_model=True) logs the checkpoints Lightning kept once training
    succeeded, byte-equal to the files on disk, `best` on the best one."""
    _need("lightning")
    result = _script(
        shim, tmp_path, "lightning_script.py", TEST_LOG_MODEL="true", **_online(server)
    )
    data = wisp.open_run(result["run_dir"])
    ckpt = tmp_path / "ckpt"
    name = f"model-{data.id}"
    got = set()
    for n in range(len(result["kept"])):
        art, root = reader("lit", f"{name}:v{n}")
        filename = art.metadata["original_filename"]
        assert (root / "model.ckpt").read_bytes() == (ckpt / filename).read_bytes()
        got.add(filename)
    assert got == set(result["kept"])
    with pytest.raises(ArtifactError):
        reader("lit", f"{name}:v{len(got)}")
    art, root = reader("lit", f"{name}:best")
    assert (root / "model.ckpt").read_bytes() == Path(result["best"]).read_bytes()


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
def test_transformers_log_model_end_logs_the_final_model(
    shim: Path, tmp_path: Path, server: Any, reader: Any
) -> None:
    """WANDB_LOG_MODEL=end logs the architecture before training (`base_model`) and the
    final model after it (`final_model`) from temporary folders Transformers deletes at
    once; the weights and config equal those trainer.save_model writes afterwards."""
    _need("transformers")
    result = _script(
        shim, tmp_path, "transformers_script.py", WANDB_LOG_MODEL="end", **_online(server)
    )
    name = f"model-{result['run_id']}"
    base, root = reader("huggingface", f"{name}:base_model")
    assert base.metadata["initial_model"] is True
    assert "BertForSequenceClassification" in (root / "model_architecture.txt").read_text()
    art, root = reader("huggingface", f"{name}:final_model")
    assert art.version == "v1" and art.metadata["final_model"] is True
    for filename in ("model.safetensors", "config.json"):
        want = (tmp_path / "final" / filename).read_bytes()
        assert (root / filename).read_bytes() == want, filename


@pytest.mark.slow
def test_transformers_log_model_checkpoint_logs_each_checkpoint_folder(
    shim: Path, tmp_path: Path, server: Any, reader: Any
) -> None:
    """WANDB_LOG_MODEL=checkpoint logs each checkpoint-N folder the Trainer saves as a
    version aliased checkpoint_global_step_N, every file equal to the folder's."""
    _need("transformers")
    result = _script(
        shim, tmp_path, "transformers_script.py", WANDB_LOG_MODEL="checkpoint", **_online(server)
    )
    name = f"model-{result['run_id']}"
    for step in (4, 8):
        folder = tmp_path / "hf" / f"checkpoint-{step}"
        art, root = reader("huggingface", f"{name}:checkpoint_global_step_{step}")
        files = {e.path for e in art.files()}
        assert files == {p.name for p in folder.iterdir()} and "model.safetensors" in files
        for f in files:
            assert (root / f).read_bytes() == (folder / f).read_bytes(), (step, f)


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
def test_keras_model_checkpoint_logs_each_epochs_file(
    shim: Path, tmp_path: Path, server: Any, reader: Any
) -> None:
    """WandbModelCheckpoint logs the file Keras saves each epoch as a version of
    run_<id>_model (epoch_<e>), byte-equal to it although Keras rewrites the same path."""
    _need("keras")
    result = _script(shim, tmp_path, "keras_script.py", TEST_CHECKPOINT="1", **_online(server))
    assert len(result["saved"]) == 3
    for epoch, sha in enumerate(result["saved"]):
        art, root = reader("keras", f"run_{result['run_id']}_model:epoch_{epoch}")
        assert art.type == "model" and [e.path for e in art.files()] == ["model.keras"]
        assert _sha(root / "model.keras") == sha, epoch


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
