"""Arrays and tensors in log() and summary, as a wandb user logs them."""

import numpy as np
import torch
from _impl import result, wandb

run = wandb.init(project="compat")
wandb.log(
    {
        "per_class_acc": np.array([0.5, 0.25, 0.75]),
        "confusion": np.array([[1, 2], [3, 4]]),
        "weights": np.arange(100.0),
        "t_small": torch.tensor([1.0, 2.0]),
        "t_big": torch.arange(40.0),
        "empty": np.zeros(0),
    }
)
run.summary["last_acc"] = np.array([0.5, 0.25])
run.summary["dist"] = np.arange(40.0)
result(run_dir=getattr(run, "dir", None))
run.finish()
