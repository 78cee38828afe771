"""The Keras callbacks of ``wandb.integration.keras`` (see the package docstring)."""

from __future__ import annotations

from typing import Any

import wisp
from wisp.errors import RunStateError, UsageError
from wisp.integrations.keras import WispCallback
from wisp.wandb_compat import MODEL_LOGGING

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


def _refuse(name: str) -> Any:
    class Refused:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise UsageError(f"wandb.integration.keras.{name}: {MODEL_LOGGING}")

    Refused.__name__ = Refused.__qualname__ = name
    return Refused


#: Model logging needs artifacts, which wisp does not have yet.
WandbModelCheckpoint = _refuse("WandbModelCheckpoint")
