"""``wandb.sdk.wandb_run``: ``Run`` is wisp's Run."""

from __future__ import annotations

from wisp._run import Run

__all__ = ["Run"]
