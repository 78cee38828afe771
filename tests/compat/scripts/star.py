"""`from wisp import *` and hasattr() outside a run, as libraries probing wandb do."""

from _impl import wandb

if wandb.__name__ == "wisp":
    from wisp import *  # noqa: F403
from _impl import result

seen = {"has_config": hasattr(wandb, "config"), "has_summary": hasattr(wandb, "summary")}
seen["has_nonsense"] = hasattr(wandb, "no_such_name")
try:
    wandb.config["lr"]
    seen["config_read"] = "no error"
except Exception as exc:  # noqa: BLE001
    seen["config_read"] = type(exc).__name__
seen["run_is_none"] = wandb.run is None
result(**seen)
