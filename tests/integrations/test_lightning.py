"""WispLogger with a real Lightning Trainer on CPU torch."""

from __future__ import annotations

import os
from typing import Any

import pytest

import wisp

from .integrations_support import require

require("lightning")
import torch  # noqa: E402
from lightning.pytorch import LightningModule, Trainer  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402
from lightning.pytorch.utilities import rank_zero_only  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from wisp.integrations.lightning import WispLogger  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*does not have many workers:UserWarning"),
    pytest.mark.filterwarnings("ignore:You defined a `validation_step` but have no:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*(GPU|TPU|HPU) available:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
    pytest.mark.timeout(120),
]


class Tiny(LightningModule):
    def __init__(self, lr: float = 0.05, hidden: int = 3, fail_at: int = -1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
        )

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if self.global_step == self.hparams.fail_at:
            raise RuntimeError("boom")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader() -> DataLoader[Any]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 4, generator=g)
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=4)


def trainer(tmp_path: Any, logger: Any, max_epochs: int = 2, **kwargs: Any) -> Trainer:
    return Trainer(
        default_root_dir=tmp_path,
        logger=logger,
        max_epochs=max_epochs,
        log_every_n_steps=1,
        accelerator="cpu",
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


def test_fit_records_hparams_metrics_steps_and_checkpoints(tmp_path: Any) -> None:
    """A fit with WispLogger next to CSVLogger records config, train/val metrics at Lightning's
    steps, every checkpoint, and finishes the run."""
    csv = CSVLogger(tmp_path / "csv")
    logger = WispLogger(
        project="lit", name="tiny", save_dir=tmp_path, log_model="all", config={"dataset": "random"}
    )
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="val_loss", save_top_k=2)
    trainer(tmp_path, [logger, csv], callbacks=[ckpt]).fit(
        Tiny(lr=0.05, hidden=3), loader(), loader()
    )

    run = logger.experiment
    assert run.state == "finished"
    assert wisp.run is None
    data = wisp.open_run(run.dir)
    assert data.state == "finished"
    assert data.project == "lit" and data.name == "tiny"
    assert data.config["lr"] == 0.05 and data.config["hidden"] == 3
    assert data.config["dataset"] == "random"
    steps, losses = data.scalars("train_loss")
    assert steps == list(range(8))  # 4 batches x 2 epochs, Lightning's global step
    assert all(isinstance(v, float) for v in losses)
    val_steps, _ = data.scalars("val_loss")
    assert val_steps == [3, 7]
    _, epochs = data.scalars("epoch")
    assert epochs[0] == 0 and epochs[-1] == 1
    # the CSV logger saw the same train steps
    import csv as csvmod

    with open(os.path.join(csv.log_dir, "metrics.csv")) as f:
        csv_steps = sorted({int(r["step"]) for r in csvmod.DictReader(f) if r["train_loss"]})
    assert csv_steps == steps
    files = data.records["file"]
    assert files and {f["kind"] for f in files} == {"checkpoint"}
    assert all(f["monitor"] == "val_loss" for f in files)
    for f in files:
        stored = os.path.join(run.dir, f["path"])
        assert os.path.getsize(stored) == f["size"] > 0
    assert any(f["best"] for f in files)


def test_failed_fit_marks_run_failed(tmp_path: Any) -> None:
    """An exception in training_step finalizes the run as failed, with the steps before it."""
    logger = WispLogger(project="lit", save_dir=tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        trainer(tmp_path, logger).fit(Tiny(fail_at=3), loader())
    data = wisp.open_run(logger.experiment.dir)
    assert data.state == "failed"
    assert data.finish is not None and data.finish["exit_code"] == 1
    assert data.scalars("train_loss")[0] == [0, 1, 2]


def test_non_zero_rank_records_nothing(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a rank other than zero the logger starts no run and writes no files."""
    monkeypatch.setattr(rank_zero_only, "rank", 1)
    logger = WispLogger(project="lit", save_dir=tmp_path / "runs")
    logger.log_hyperparams({"lr": 1.0})
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.finalize("success")
    assert logger.version is None
    assert wisp.run is None
    assert not (tmp_path / "runs").exists()


def test_existing_run_is_reused_and_left_open(tmp_path: Any) -> None:
    """With a current run, the logger records into it and leaves finishing it to its owner."""
    run = wisp.init(project="mine", config={"seed": 1})
    logger = WispLogger()
    trainer(tmp_path, logger, max_epochs=1).fit(Tiny(), loader())
    assert logger.experiment is run and run.state == "running"
    wisp.log({"after": 1.0})
    wisp.finish()
    data = wisp.open_run(run.dir)
    assert data.config["seed"] == 1 and data.config["lr"] == 0.05
    assert data.scalars("train_loss")[0] == [0, 1, 2, 3]
    assert data.scalars("after")[0] == [3]  # joins the open row at Lightning's last step


def test_lower_step_after_fit_keeps_lightning_step(tmp_path: Any) -> None:
    """A step below the run's current one is recorded at the current step with the original
    in trainer/global_step, instead of being refused."""
    logger = WispLogger(project="lit", save_dir=tmp_path)
    logger.log_metrics({"a": 1.0}, step=5)
    logger.log_metrics({"b": 2.0}, step=2)
    logger.finalize("success")
    data = wisp.open_run(logger.experiment.dir)
    rows = list(data.history())
    assert rows[0]["_step"] == 5 and rows[0]["a"] == 1.0
    assert rows[-1]["b"] == 2.0 and rows[-1]["trainer/global_step"] == 2
    assert rows[-1]["_step"] >= 5


def test_log_model_true_records_the_best_checkpoint_at_the_end(tmp_path: Any) -> None:
    """log_model=True copies the checkpoints once, at finalize, marking the best one."""
    logger = WispLogger(project="lit", save_dir=tmp_path, log_model=True)
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="val_loss", save_top_k=1)
    trainer(tmp_path, logger, callbacks=[ckpt]).fit(Tiny(), loader(), loader())
    data = wisp.open_run(logger.experiment.dir)
    (rec,) = data.records["file"]
    assert rec["best"] is True and rec["kind"] == "checkpoint"
    assert rec["name"] == f"checkpoints/{os.path.basename(ckpt.best_model_path)}"
    assert rec["score"] == pytest.approx(ckpt.best_model_score.item())
