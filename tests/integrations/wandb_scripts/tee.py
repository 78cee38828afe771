"""A wandb script logging offline with the real wandb, teed into wisp by one line."""

import json
import sys

import numpy as np
import wandb

import wisp

original = wandb.init
wisp.tee_wandb()
run = wandb.init(
    project="tee",
    name="both",
    config={"lr": 0.01, "arch": {"depth": 3}},
    tags=["a", "b"],
    notes="dual",
    mode="offline",
)
for step in range(5):
    wandb.log({"loss": 1.0 / (step + 1), "acc": step * 0.1, "text": f"s{step}"})
    if step % 2 == 0:
        run.log({"val/loss": 0.5 - step * 0.01}, commit=False)
run.log({"hist": wandb.Histogram(np.arange(10.0))}, step=7)
run.config.update({"epochs": 5})
run.summary["best"] = 0.9
wandb.finish()
teed = wandb.init is not original
wisp.untee_wandb()
seen = {
    "id": run.id,
    "wisp_dir": run._wisp_tee.dir,
    "teed": teed,
    "restored": wandb.init is original,
}
print("RESULT " + json.dumps(seen))
sys.stdout.flush()
