"""``wandb.integration.sb3.WandbCallback``: Stable-Baselines3 training into the current run.

As wandb's callback: the algorithm's name and simple attributes go to ``config``
(``setdefaults``), ``gradient_save_freq > 0`` watches the policy, and ``model_save_path``
saves ``model.zip`` every ``model_save_freq`` calls and at the end, into the run's files
(``wisp.save``).  wandb gets SB3's metrics through ``sync_tensorboard``, which wisp does
not read; this callback instead adds an output format to the model's SB3 logger, so
every ``logger.dump(step)`` is logged as one row with ``global_step`` = the step SB3
dumps at (``define_metric("*", step_metric="global_step")``), every key included
(also those SB3 keeps out of tensorboard, such as ``time/total_timesteps``).
"""

from __future__ import annotations

from wisp.wandb_compat.integration.sb3._callback import WandbCallback

__all__ = ["WandbCallback"]
