"""wandb's docs, "Query and edit runs": filter with MongoDB queries, update config,
summary and tags, rename a summary metric."""

import json
import os

import wandb

api = wandb.Api()
entity, project, run_id = os.environ["ENTITY"], os.environ["PROJECT"], os.environ["RUN_ID"]
path = f"{entity}/{project}"

seen = {}
runs = api.runs(
    path,
    filters={"display_name": {"$regex": "^v"}, "createdAt": {"$gt": "2020-01-01T00:00:00"}},
)
seen["regex_and_date"] = sorted(r.name for r in runs)
seen["future"] = len(api.runs(path, filters={"createdAt": {"$gt": "2100-01-01T00:00:00"}}))
seen["by_config"] = sorted(r.name for r in api.runs(path, {"config.lr": {"$lt": 0.05}}))

run = api.run(f"{entity}/{project}/{run_id}")
run.config["lr"] = 0.5
run.update()

run.summary["new_key"] = 1.5
run.summary.update()

run.summary["accuracy"] = run.summary["acc"]
del run.summary["acc"]
run.summary.update()

try:
    run.tags.append("golden")
    run.update()
    seen["tags_error"] = None
except wandb.errors.Error as exc:
    seen["tags_error"] = type(exc).__name__

back = api.run(f"{entity}/{project}/{run_id}")
seen["config_lr"] = back.config["lr"]
seen["summary"] = {k: back.summary.get(k) for k in ("new_key", "accuracy", "acc")}
seen["tags"] = back.tags
print("RESULT " + json.dumps(seen))
