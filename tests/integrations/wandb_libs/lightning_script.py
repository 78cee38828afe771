"""Lightning's WandbLogger beside a CSVLogger, unmodified, through `import wandb` = wisp."""

import hashlib
import json
import os
import sys

import lightning as L
import torch
import wandb
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, WandbLogger
from torch.utils.data import DataLoader, TensorDataset

out = sys.argv[1]
assert wandb.__name__ == "wisp.wandb_compat", wandb


class Model(L.LightningModule):
    def __init__(self, lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)
        )

    def training_step(self, batch, idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class HashingCheckpoint(ModelCheckpoint):
    """Lightning's ModelCheckpoint, noting the sha256 of each file once it is written."""

    written: list = []

    def _save_checkpoint(self, trainer, filepath):
        super()._save_checkpoint(trainer, filepath)  # the loggers log it in here
        with open(filepath, "rb") as f:
            self.written.append([os.path.basename(filepath), hashlib.sha256(f.read()).hexdigest()])


torch.manual_seed(0)
x = torch.randn(64, 4)
data = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
model = Model()
log_model = {"all": "all", "true": True}.get(os.environ.get("TEST_LOG_MODEL", ""), False)
checkpoint = HashingCheckpoint(dirpath=out + "/ckpt", monitor="val_loss", save_top_k=2)
wandb_logger = WandbLogger(project="lit", save_dir=out, log_model=log_model)
wandb_logger.watch(model, log="all", log_freq=4)
csv_logger = CSVLogger(out, name="csv")
trainer = L.Trainer(
    max_epochs=3,
    logger=[wandb_logger, csv_logger],
    log_every_n_steps=2,
    callbacks=[checkpoint] if log_model else [],
    enable_checkpointing=bool(log_model),
    enable_progress_bar=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(model, data, data)
run_dir = wandb_logger.experiment.dir
wandb.finish()
with open(out + "/result.json", "w") as f:
    json.dump(
        {
            "run_dir": run_dir,
            "csv": csv_logger.log_dir + "/metrics.csv",
            "written": checkpoint.written,
            "best": checkpoint.best_model_path,
            "kept": sorted(os.path.basename(p) for p in checkpoint.best_k_models),
        },
        f,
    )
