"""config, summary and define_metric as wandb scripts use them."""

from _impl import result, wandb

run = wandb.init(project="compat", config={"lr": 0.1, "id2label": {0: "cat", 1: "dog"}})
wandb.config.update({"lr": 0.01, "epochs": 3}, allow_val_change=True)
wandb.config.setdefaults({"lr": 0.5, "batch_size": 32})
loss_metric = wandb.define_metric("loss", summary="min")
wandb.define_metric("loss", summary="max")
wandb.define_metric("acc", summary="min,max")
# goal= was removed in wandb 0.30; older wandb and wisp take it
goal = {"goal": "minimize"} if wandb.__name__ == "wisp" else {}
wandb.define_metric("val_loss", summary="min", **goal)
wandb.define_metric("val/*", step_metric="epoch", step_sync=True)
for i, (loss, a) in enumerate([(0.9, 0.1), (0.4, 0.7), (0.6, 0.5)]):
    wandb.log({"loss": loss, "acc": a, "val_loss": loss + 1, "epoch": i})
    wandb.log({"val/f1": a / 2})
run.summary.update({"eval": {"f1": 0.6, "p": 0.5}})
run.summary.best = 5
seen = {
    "eval": dict(run.summary["eval"]),
    "best_attr": run.summary.best,
    "metric_name": loss_metric.name,
    "config_keys": sorted(dict(wandb.config)),
    "lr": wandb.config.lr,
}
result(**seen, run_dir=getattr(run, "dir", None))
run.finish()
