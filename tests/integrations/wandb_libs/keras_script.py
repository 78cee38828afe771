"""Keras' WandbMetricsLogger, unmodified user code, through `import wandb` = wisp."""

import hashlib
import json
import os
import sys

import keras
import numpy as np
import wandb
from wandb.integration.keras import WandbMetricsLogger, WandbModelCheckpoint

out = sys.argv[1]
assert wandb.__name__ == "wisp.wandb_compat", wandb
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
run = wandb.init(project="keras", dir=out)
callbacks = [WandbMetricsLogger(log_freq="batch")]
saved = []  # sha256 of model.keras after each epoch's save (the same path is rewritten)
if os.environ.get("TEST_CHECKPOINT"):
    ckpt = out + "/model.keras"
    callbacks.append(WandbModelCheckpoint(ckpt))

    def _hash(epoch, logs):
        with open(ckpt, "rb") as f:
            saved.append(hashlib.sha256(f.read()).hexdigest())

    callbacks.append(keras.callbacks.LambdaCallback(on_epoch_end=_hash))
history = model.fit(
    x,
    y,
    epochs=3,
    batch_size=8,
    validation_split=0.25,
    verbose=0,
    callbacks=callbacks,
)
run_dir, run_id = run.dir, run.id
wandb.finish()
with open(out + "/result.json", "w") as f:
    json.dump(
        {
            "run_dir": run_dir,
            "run_id": run_id,
            "history": history.history,
            "steps": history.params["steps"],
            "saved": saved,
        },
        f,
    )
