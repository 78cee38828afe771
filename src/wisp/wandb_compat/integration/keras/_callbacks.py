"""The Keras callbacks of ``wandb.integration.keras`` (see the package docstring)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import keras  # type: ignore[import-untyped]

import wisp
from wisp.errors import RunStateError
from wisp.integrations._common import flatten_numbers
from wisp.integrations.keras import WispCallback

__all__ = ["WandbMetricsLogger", "WandbModelCheckpoint"]


class WandbMetricsLogger(WispCallback):
    """wandb's ``WandbMetricsLogger``: the metrics of ``fit`` into the current run."""

    def __init__(
        self, log_freq: str | int = "epoch", initial_global_step: int = 0, *args: Any, **kwargs: Any
    ) -> None:
        if wisp.run is None:
            raise RunStateError("You must call wandb.init() before WandbMetricsLogger()")
        super().__init__(log_freq=log_freq, finish=False)
        self._batches = initial_global_step
        self._batch_step = initial_global_step  # wandb's global_batch: += log_freq a log

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        super().on_train_begin(logs)
        if self._log_freq and self._run is not None:
            self._run.define_metric("batch/*", step_metric="batch/batch_step")

    def _learning_rate(self) -> float | None:
        """The optimizer's current learning rate (a schedule's value), as wandb logs it."""
        optimizer = getattr(self.model, "optimizer", None)
        lr = getattr(optimizer, "learning_rate", None)
        if lr is None or optimizer is None:
            return None
        try:
            if callable(lr):
                lr = lr(optimizer.iterations)
            return float(keras.ops.convert_to_numpy(lr))
        except (TypeError, ValueError, AttributeError):
            return None

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = self._batches
        self._batches += 1
        if self._log_freq and step % self._log_freq == 0:
            row = flatten_numbers(logs, "batch/")
            row["batch/batch_step"] = self._batch_step
            self._batch_step += self._log_freq
            lr = self._learning_rate()
            if lr is not None:
                row["batch/learning_rate"] = lr
            self._step_log(row, step)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        row = flatten_numbers(logs, "epoch/")
        row["epoch/epoch"] = epoch
        lr = self._learning_rate()
        if lr is not None:
            row["epoch/learning_rate"] = lr
        self._step_log(row, max(self._batches - 1, 0))


class WandbModelCheckpoint(keras.callbacks.ModelCheckpoint):  # type: ignore[misc]
    """wandb's ``WandbModelCheckpoint``: Keras' ``ModelCheckpoint`` that logs each file it
    writes as a version of the ``model`` artifact ``run_<id>_model`` (aliases ``latest``
    and ``epoch_<e>`` or ``epoch_<e>_batch_<b>``).

    The bytes are copied into the artifact when the file is written, so Keras may
    overwrite the same path at the next save; a save skipped by ``save_best_only``
    logs nothing."""

    def __init__(
        self,
        filepath: str,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: str | int = "epoch",
        initial_value_threshold: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filepath=filepath,
            monitor=monitor,
            verbose=verbose,
            save_best_only=save_best_only,
            save_weights_only=save_weights_only,
            mode=mode,
            save_freq=save_freq,
            initial_value_threshold=initial_value_threshold,
        )
        if wisp.run is None:
            raise RunStateError("You must call wandb.init() before WandbModelCheckpoint()")
        self._saving = False

    def _should_save_model(self, epoch: int, batch: int | None, logs: Any, filepath: str) -> bool:
        self._saving = bool(super()._should_save_model(epoch, batch, logs, filepath))
        return self._saving

    def _save_model(self, epoch: int, batch: int | None, logs: Any) -> None:
        self._saving = False
        super()._save_model(epoch, batch, logs)  # asks _should_save_model, then saves
        run = wisp.run
        path = self._get_file_path(epoch, batch, logs)
        if not self._saving or run is None or not os.path.isfile(path):
            return  # not saved this time (save_best_only), or no run to log to
        tag = f"epoch_{epoch}" if batch is None else f"epoch_{epoch}_batch_{batch}"
        art = wisp.Artifact(f"run_{run.id}_model", type="model")
        # a copy, not add_file's hard link: Keras rewrites the same path in place
        with open(path, "rb") as fin, art.new_file(os.path.basename(path), mode="wb") as fout:
            shutil.copyfileobj(fin, fout)
        run.log_artifact(art, aliases=["latest", tag])
