"""PyTorch Lightning with wisp: `python examples/integrations/lightning_example.py`.

Needs `pip install torch==2.13.0 lightning`.  Runs on CPU in a few seconds.
"""

import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

import wisp
from wisp.integrations.lightning import WispLogger


class Regressor(LightningModule):
    def __init__(self, lr: float = 0.05, hidden: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()  # -> the run's config
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def data() -> DataLoader:
    x = torch.randn(256, 4)
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=32)


if __name__ == "__main__":
    logger = WispLogger(project="lightning-demo", log_model=True)
    trainer = Trainer(
        max_epochs=3,
        logger=[logger, CSVLogger("lightning_logs")],  # several loggers at once
        callbacks=[ModelCheckpoint(monitor="val_loss")],
        accelerator="cpu",
        log_every_n_steps=2,
        enable_progress_bar=False,
    )
    trainer.fit(Regressor(), data(), data())
    run = wisp.open_run(logger.experiment.dir)
    print(run.state, run.config, run.summary)
