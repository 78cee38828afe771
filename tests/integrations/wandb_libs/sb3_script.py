"""Stable-Baselines3 with wandb's WandbCallback, unmodified user code, through wisp."""

import json
import sys

import wandb
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure
from wandb.integration.sb3 import WandbCallback

out = sys.argv[1]
assert wandb.__name__ == "wisp.wandb_compat", wandb
run = wandb.init(project="sb3", config={"policy_type": "MlpPolicy"})
model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=2, seed=0, device="cpu")
model.set_logger(configure(out + "/sb3", ["csv"]))
model.learn(
    total_timesteps=256,
    callback=WandbCallback(gradient_save_freq=2, model_save_path=out + "/models", verbose=0),
)
run_dir = run.dir
wandb.finish()
with open(out + "/result.json", "w") as f:
    json.dump({"run_dir": run_dir, "csv": out + "/sb3/progress.csv"}, f)
