"""wandb's docs, "Read run history": scan_history, sampled history, the system stream."""

import json
import os

import wandb

api = wandb.Api()
entity, project, run_id = os.environ["ENTITY"], os.environ["PROJECT"], os.environ["RUN_ID"]
run = api.run(f"{entity}/{project}/{run_id}")

history = run.scan_history(keys=["loss"])
losses = [row["loss"] for row in history]
both = [row["_step"] for row in run.scan_history(keys=["loss", "acc"])]
window = [row["_step"] for row in run.scan_history(keys=["loss"], min_step=2, max_step=5)]
every = list(run.scan_history())
sampled = run.history(keys=["acc"])
default = run.history()
system = run.history(stream="system")

seen = {
    "losses": losses,
    "both": both,
    "window": window,
    "every_steps": [r["_step"] for r in every],
    "sampled_steps": [int(s) for s in sampled["_step"]],
    "default_columns": sorted(default.columns),
    "default_max_step": int(default["_step"].max()),
    "system_rows": len(system) > 0,
    "system_columns": sorted(c for c in system.columns if not c.startswith("system/")),
    "system_keys": all(c.startswith(("system/", "_")) for c in system.columns),
    "system_metrics": sorted(run.system_metrics)
    == sorted(c for c in system.columns if c.startswith("system/")),
    "last_step": run.lastHistoryStep,
}
print("RESULT " + json.dumps(seen))
