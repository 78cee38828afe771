"""``wandb.wandb_run``: ``Run`` is wisp's Run, so ``isinstance(wandb.run, Run)`` holds."""

from __future__ import annotations

from wisp._run import Run

__all__ = ["Run"]
