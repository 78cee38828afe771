"""Run attributes and methods a wandb script touches."""

import os

import torch
from _impl import result, wandb

run = wandb.init(project="compat", entity="team", name="before", tags=["a"], notes="n0")
seen = {
    "path": run.path,
    "entity": run.entity,
    "offline": run.offline,
    "start_time": run.start_time,
    "resumed": run.resumed,
    "url": run.url,
    "project_name": run.project_name(),
    "id": run.id,
}
wandb.log({"x": 1.0})
run.name = "after"
run.tags = ["a", "b"]
run.notes = "n1"
wandb.log({"x": 2.0})
model = torch.nn.Linear(3, 2)
run.watch(model, log="all", log_freq=1)
model(torch.ones(4, 3)).sum().backward()
wandb.log({"x": 3.0})
run.unwatch(model)
model(torch.ones(4, 3)).sum().backward()
wandb.log({"x": 4.0})
run.alert(title="t", text="hello")
run.mark_preempting()
with open(os.path.join(run.dir, "model.txt"), "w") as f:  # files written into run.dir
    f.write("weights v1")
run.finish()
result(**seen, run_dir=run.dir)
