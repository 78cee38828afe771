"""Keras 3 with wisp: `KERAS_BACKEND=torch python examples/integrations/keras_example.py`.

Needs `pip install keras torch==2.13.0` (any Keras backend works).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras
import numpy as np

import wisp
from wisp.integrations.keras import WispCallback

if __name__ == "__main__":
    x = np.random.default_rng(0).normal(size=(512, 8)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("float32")
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    callback = WispCallback(project="keras-demo", log_freq=4)  # every 4th batch
    model.fit(x, y, epochs=3, batch_size=32, validation_split=0.2, verbose=0, callbacks=[callback])
    run = wisp.open_run(callback.run.dir)
    print(run.state, run.scalars("epoch/val_accuracy"))
