"""Run lifecycle: wandb.run after finish, `with`, reinit="create_new" and "return_previous"."""

from _impl import result, wandb

seen = {}
run = wandb.init(project="compat")
seen["run_while_live"] = wandb.run is run
run.finish()
seen["run_after_finish"] = wandb.run is None
with wandb.init(project="compat") as run2:
    seen["run_in_with"] = wandb.run is run2
    wandb.log({"x": 1})
seen["run_after_with"] = wandb.run is None

first = wandb.init(project="compat", name="first")
second = wandb.init(project="compat", name="second", reinit="create_new")
seen["create_new_keeps_current"] = wandb.run is first
first.log({"a": 1})
second.log({"b": 2})
third = wandb.init(project="compat", reinit="return_previous")
seen["return_previous_is_newest"] = third is second
second.finish()
seen["current_after_other_finished"] = wandb.run is first
first.log({"a": 3})
first.finish()
seen["none_at_end"] = wandb.run is None
result(**seen, dirs=[first.dir, second.dir])
