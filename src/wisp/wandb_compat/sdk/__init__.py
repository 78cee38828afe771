"""``wandb.sdk``: the submodules integrations import (``wandb_run``, ``lib``)."""

from __future__ import annotations

from wisp.wandb_compat.sdk import lib, wandb_run

__all__ = ["lib", "wandb_run"]
