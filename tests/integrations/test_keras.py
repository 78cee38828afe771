"""WispCallback with real Keras 3 on the torch backend (CPU)."""

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

from wisp.integrations.keras import WispCallback  # noqa: E402

pytestmark = [
    pytest.mark.timeout(120),
    # keras' torch backend hands numpy tensors whose __array__ predates numpy 2's copy keyword
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"),
]


def fit(callback: WispCallback, epochs: int = 2) -> Any:
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(24, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse", metrics=["mae"])
    return model.fit(
        x, y, batch_size=8, epochs=epochs, validation_split=0.25, verbose=0, callbacks=[callback]
    )


def test_fit_records_batch_and_epoch_metrics(tmp_path: Any) -> None:
    """Batch metrics land at a step counting batches across epochs, epoch metrics (with
    validation) on each epoch's last batch row, the config holds the fit parameters and the
    optimizer, and the run finishes with training."""
    assert keras.backend.backend() == "torch"
    cb = WispCallback(project="keras", name="tiny")
    history = fit(cb)
    run = cb.run
    assert run is not None and run.state == "finished"
    data = wisp.open_run(run.dir)
    assert data.state == "finished"
    steps, _ = data.scalars("batch/loss")
    assert steps == [0, 1, 2, 3, 4, 5]  # 18 training samples / 8 -> 3 batches x 2 epochs
    assert data.scalars("batch/mae")[0] == steps
    epoch_steps, epochs = data.scalars("epoch/epoch")
    assert epoch_steps == [2, 5] and epochs == [0, 1]
    _, val_losses = data.scalars("epoch/val_loss")
    assert val_losses == pytest.approx(history.history["val_loss"])
    _, epoch_losses = data.scalars("epoch/loss")
    assert epoch_losses == pytest.approx(history.history["loss"])
    assert data.config["keras/backend"] == "torch"
    assert data.config["keras/fit"]["epochs"] == 2
    assert data.config["optimizer"]["learning_rate"] == pytest.approx(0.01)
    assert data.config["model/num_parameters"] == 4 * 3 + 3 + 3 + 1
    assert data.metrics[0]["name"] == "epoch/*"
    assert data.metrics[0]["step_metric"] == "epoch/epoch"


def test_epoch_only_logging(tmp_path: Any) -> None:
    """log_freq='epoch' records no batch metrics, only the epoch ones."""
    cb = WispCallback(project="keras", log_freq="epoch")
    fit(cb, epochs=3)
    assert cb.run is not None
    data = wisp.open_run(cb.run.dir)
    keys = list(data.keys())
    assert not [k for k in keys if k.startswith("batch/")]
    assert data.scalars("epoch/epoch")[1] == [0, 1, 2]


def test_bad_log_freq_is_refused() -> None:
    """An unknown log_freq raises UsageError naming the accepted values."""
    with pytest.raises(wisp.UsageError, match="'batch', 'epoch'"):
        WispCallback(log_freq="sometimes")
