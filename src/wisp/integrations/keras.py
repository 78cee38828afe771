"""Keras 3: ``model.fit(..., callbacks=[WispCallback(project=...)])``.

- batch metrics every ``log_freq`` training batches as ``batch/<metric>``, at a
  step that counts batches across epochs;
- epoch metrics (including ``val_*``) at the end of each epoch as
  ``epoch/<metric>``, with ``epoch/epoch``, on the row of that epoch's last
  batch; ``define_metric("epoch/*", step_metric="epoch/epoch")`` lets charts use
  epochs as the x axis;
- config: ``fit``'s parameters (epochs, steps), the optimizer's config, the
  parameter count and the backend;
- the run the callback started is finished when training ends.

Works on any Keras 3 backend (tested with ``KERAS_BACKEND=torch``).  Needs ``keras>=3``.
"""

from __future__ import annotations

from typing import Any

try:
    import keras  # type: ignore[import-untyped]
except ImportError as exc:  # pragma: no cover - exercised only without keras
    raise ImportError(
        "wisp.integrations.keras needs Keras 3; install it with `pip install keras` "
        "and a backend (e.g. torch), and set KERAS_BACKEND"
    ) from exc

import wisp
from wisp import _current
from wisp._run import Run
from wisp.errors import UsageError
from wisp.integrations._common import config_safe, flatten_numbers

__all__ = ["WispCallback"]


class WispCallback(keras.callbacks.Callback):  # type: ignore[misc]
    """Records a Keras ``fit``; other arguments go to :func:`wisp.init`."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        dir: str | None = None,  # noqa: A002 - wisp.init's name
        *,
        log_freq: int | str = "batch",
        finish: bool = True,
        **init_kwargs: Any,
    ) -> None:
        super().__init__()
        if log_freq == "batch":
            log_freq = 1
        elif log_freq == "epoch":
            log_freq = 0
        if isinstance(log_freq, bool) or not isinstance(log_freq, int) or log_freq < 0:
            raise UsageError(
                f"WispCallback log_freq must be 'batch', 'epoch' or an int >= 1, got {log_freq!r}"
            )
        self._log_freq = log_freq
        self._project = project
        self._name = name
        self._dir = dir
        self._finish = finish
        self._init_kwargs = init_kwargs
        self._run: Run | None = None
        self._owns_run = False
        self._batches = 0

    @property
    def run(self) -> Run | None:
        """The run being recorded (None before training starts)."""
        return self._run

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        run = self._run
        if run is None or run.state != "running":
            if wisp.run is not None:
                self._run, self._owns_run = wisp.run, False
            else:
                self._run = wisp.init(
                    project=self._project, name=self._name, dir=self._dir, **self._init_kwargs
                )
                self._owns_run = True
            run = self._run
            run.define_metric("epoch/*", step_metric="epoch/epoch")
        config: dict[str, Any] = {"keras/backend": keras.backend.backend()}
        if self.params:
            config["keras/fit"] = dict(self.params)
        model = self.model
        if model is not None:
            optimizer = getattr(model, "optimizer", None)
            if optimizer is not None and hasattr(optimizer, "get_config"):
                config["optimizer"] = optimizer.get_config()
            if model.built:
                config["model/num_parameters"] = int(model.count_params())
        run.config.update(config_safe(config))

    def _step_log(self, row: dict[str, Any], step: int) -> None:
        run = self._run
        if run is None or not row:
            return
        if step >= run.step:
            run.log(row, step=step)
        else:
            run.log({**row, "batch/step": step})

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = self._batches
        self._batches += 1
        if self._log_freq and step % self._log_freq == 0:
            self._step_log(flatten_numbers(logs, "batch/"), step)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        row = flatten_numbers(logs, "epoch/")
        row["epoch/epoch"] = epoch
        self._step_log(row, max(self._batches - 1, 0))

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        run = self._run
        if run is None or not self._owns_run or not self._finish or run.state != "running":
            return
        if wisp.run is run:
            _current.run = None
        run.finish()
