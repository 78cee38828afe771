"""The Stable-Baselines3 callback of ``wandb.integration.sb3`` (see the package docstring)."""

from __future__ import annotations

import os
from typing import Any

try:
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import KVWriter, filter_excluded_keys
except ImportError as exc:  # pragma: no cover - exercised only without stable-baselines3
    raise ImportError(
        "wandb.integration.sb3 needs Stable-Baselines3: pip install stable-baselines3"
    ) from exc

import wisp
from wisp._run import Run
from wisp.errors import RunStateError
from wisp.integrations._common import flatten_numbers

__all__ = ["WandbCallback"]


class _RunWriter(KVWriter):
    """An SB3 logger output format that logs each dump as one row of ``run``."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def write(
        self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0
    ) -> None:
        if not self.run.live:
            return
        # every key SB3 writes (tensorboard's exclusions, such as time/iterations, are
        # for tensorboard's own step axis; a key excluded from "wisp" is left out)
        values = filter_excluded_keys(key_values, key_excluded, "wisp")
        row = flatten_numbers(values)
        if row:
            self.run.log({**row, "global_step": step})

    def close(self) -> None:
        """The run outlives SB3's logger; nothing to close."""


class WandbCallback(BaseCallback):
    """wandb's SB3 callback (``verbose``, ``model_save_path``, ``model_save_freq``,
    ``gradient_save_freq``, ``log``), on the current run (``wandb.init()`` first)."""

    def __init__(
        self,
        verbose: int = 0,
        model_save_path: str | None = None,
        model_save_freq: int = 0,
        gradient_save_freq: int = 0,
        log: str | None = "all",
    ) -> None:
        super().__init__(verbose)
        run = wisp.run
        if run is None:
            raise RunStateError("You must call wandb.init() before WandbCallback()")
        self._run = run
        self.model_save_path = model_save_path
        self.model_save_freq = model_save_freq
        self.gradient_save_freq = gradient_save_freq
        self.log = log
        self.path = None if model_save_path is None else os.path.join(model_save_path, "model.zip")
        if model_save_path is not None:
            os.makedirs(model_save_path, exist_ok=True)

    def _init_callback(self) -> None:
        run = self._run
        config: dict[str, Any] = {"algo": type(self.model).__name__}
        for key, value in vars(self.model).items():
            if isinstance(value, (int, float, str, bool)) or value is None:
                config[key] = value
        run.config.setdefaults(config)
        run.define_metric("global_step")
        run.define_metric("*", step_metric="global_step", step_sync=True)
        if self.gradient_save_freq > 0:
            run.watch(self.model.policy, log=self.log, log_freq=self.gradient_save_freq)
        logger = self.model.logger
        if not any(isinstance(f, _RunWriter) for f in logger.output_formats):
            logger.output_formats.append(_RunWriter(run))

    def _on_step(self) -> bool:
        if self.model_save_freq > 0 and self.n_calls % self.model_save_freq == 0:
            self.save_model()
        return True

    def _on_training_end(self) -> None:
        if self.model_save_path is not None:
            self.save_model()

    def save_model(self) -> None:
        """Save ``model.zip`` under ``model_save_path`` and into the run's files."""
        if self.path is None or self.model_save_path is None:
            return
        self.model.save(self.path)
        self._run.save(self.path, base_path=self.model_save_path)
