"""A plain script whose run fields come from the environment (CI sets WANDB_* variables)."""

from _impl import result, wandb

run = wandb.init(config={"x": 1})
wandb.log({"loss": 0.5})
seen = {
    "disabled": getattr(run, "disabled", None),
    "project": run.project,
    "name": run.name,
    "id": run.id,
    "tags": list(run.tags or ()),
    "notes": run.notes,
    "group": getattr(run, "group", None),
    "job_type": getattr(run, "job_type", None),
    "dir": run.dir,
}
run.finish()
result(**seen)
