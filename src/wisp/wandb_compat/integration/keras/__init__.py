"""``wandb.integration.keras``: ``WandbMetricsLogger`` on wisp's Keras callback.

``WandbMetricsLogger(log_freq="epoch" | "batch" | N)`` records into the current run
(``wandb.init()`` first, as wandb requires): ``epoch/<metric>`` with ``epoch/epoch``
at the end of each epoch, and ``batch/<metric>`` every ``log_freq`` batches, through
:class:`wisp.integrations.keras.WispCallback`.  ``WandbModelCheckpoint`` is Keras'
``ModelCheckpoint`` logging each file it writes as a version of the ``model`` artifact
``run_<id>_model``.
"""

from __future__ import annotations

from wisp.wandb_compat.integration.keras._callbacks import (
    WandbMetricsLogger,
    WandbModelCheckpoint,
)

__all__ = ["WandbMetricsLogger", "WandbModelCheckpoint"]
