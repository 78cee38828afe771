"""``wandb.sdk``: the submodules integrations import (``wandb.sdk.wandb_run``, ``wandb.sdk.lib``)."""

from __future__ import annotations

from wisp.wandb_compat.sdk import lib, wandb_run

__all__ = ["lib", "wandb_run"]
