"""``wandb.integration.keras.WandbMetricsLogger`` logs wandb's keys: ``batch/batch_step``
and ``batch/learning_rate`` with each batch row, ``epoch/learning_rate`` with each epoch."""

from __future__ import annotations

import os
from typing import Any

import pytest

import wisp

from .integrations_support import require

os.environ.setdefault("KERAS_BACKEND", "torch")  # must be set before keras is first imported
require("keras")
import keras  # noqa: E402
import numpy as np  # noqa: E402

from wisp.wandb_compat.integration.keras import WandbMetricsLogger  # noqa: E402

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"),
]


def test_metrics_logger_logs_learning_rate_and_batch_step(tmp_path: Any) -> None:
    """With log_freq=2 every other batch is logged with batch/batch_step counting by 2 and
    the optimizer's learning rate (a schedule's current value), and each epoch row carries
    epoch/learning_rate, as wandb's WandbMetricsLogger does."""
    run = wisp.init(project="keras-lr")
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=schedule), loss="mse")
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[WandbMetricsLogger(log_freq=2)])
    run.finish()
    rows = list(wisp.open_run(run.dir).history())
    batch = [r for r in rows if "batch/loss" in r]
    assert [r["batch/batch_step"] for r in batch] == [0, 2, 4, 6]
    # the rate after each logged batch: 0.1 * 0.5 ** (optimizer steps taken)
    assert [r["batch/learning_rate"] for r in batch] == pytest.approx(
        [0.1 * 0.5 ** (s + 1) for s in (0, 2, 4, 6)]
    )
    epochs = [r for r in rows if "epoch/epoch" in r]
    assert [r["epoch/learning_rate"] for r in epochs] == pytest.approx([0.1 * 0.5**4, 0.1 * 0.5**8])
