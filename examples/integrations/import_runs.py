"""Bring existing runs into wisp: `python examples/integrations/import_runs.py [wandb/] [runs/]`.

Converts wandb run directories (needs `pip install wandb`) and TensorBoard logdirs
(needs `pip install tensorboard`) into wisp runs under ./wisp/.
"""

import os
import sys

import wisp
from wisp.integrations.importers import import_tensorboard, import_wandb

if __name__ == "__main__":
    for path in sys.argv[1:] or ["wandb", "runs"]:
        if not os.path.isdir(path):
            continue
        is_wandb = any(n.startswith(("run-", "offline-run-")) for n in os.listdir(path))
        dirs = import_wandb(path) if is_wandb else import_tensorboard(path)
        for d in dirs:
            run = wisp.open_run(d)
            print(f"{run.project}/{run.name}: {run.state}, {len(run.keys())} metrics -> {d}")
