"""wandb's docs, "Export data": a project's runs into a DataFrame and a CSV file."""

import json
import os

import pandas as pd
import wandb

api = wandb.Api()
entity, project = os.environ["ENTITY"], os.environ["PROJECT"]
runs = api.runs(entity + "/" + project)

summary_list, config_list, name_list = [], [], []
for run in runs:
    # .summary contains the output keys/values for metrics such as accuracy.
    #  We call ._json_dict to omit large files
    summary_list.append(run.summary._json_dict)
    # .config contains the hyperparameters.
    #  We remove special values that start with _.
    config_list.append({k: v for k, v in run.config.items() if not k.startswith("_")})
    # .name is the human-readable name of the run.
    name_list.append(run.name)

runs_df = pd.DataFrame({"summary": summary_list, "config": config_list, "name": name_list})
runs_df.to_csv("project.csv")

first = next(r for r in runs if r.name == "v1-alpha")
one = api.run("/".join(first.path))
seen = {
    "rows": runs_df.to_dict("records"),
    "csv_rows": len(pd.read_csv("project.csv")),
    "projects": sorted(p.name for p in api.projects()),
    "project": api.project(project, entity=entity).name,
    "attrs": {
        "path_is_list": isinstance(one.path, list),
        "display_name": one.display_name,
        "url": one.url,
        "has_metadata": "python" in one.metadata,
        "user": one.user.username,
        "last_step": one.lastHistoryStep,
        "eval_f1": one.summary["eval"]["f1"],
        "loss_min": one.summary["loss"]["min"],
    },
}
print("RESULT " + json.dumps(seen, default=str))
