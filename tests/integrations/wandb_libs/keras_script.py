"""Keras' WandbMetricsLogger, unmodified user code, through `import wandb` = wisp."""

import json
import sys

import keras
import numpy as np
import wandb
from wandb.integration.keras import WandbMetricsLogger

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
history = model.fit(
    x,
    y,
    epochs=3,
    batch_size=8,
    validation_split=0.25,
    verbose=0,
    callbacks=[WandbMetricsLogger(log_freq="batch")],
)
run_dir = run.dir
wandb.finish()
with open(out + "/result.json", "w") as f:
    json.dump({"run_dir": run_dir, "history": history.history, "steps": history.params["steps"]}, f)
