"""wandb settings users pass, accepted by wisp.Settings."""

import warnings

from _impl import result, wandb

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    settings = wandb.Settings(
        silent=True, x_disable_stats=True, _disable_stats=True, start_method="thread"
    )
    again = wandb.Settings(start_method="thread")
run = wandb.init(project="compat", settings=settings)
wandb.log({"x": 1.0})
run.finish()
result(
    silent=settings.silent,
    warnings=[str(w.message) for w in caught],
    again_ok=again is not None,
    run_dir=run.dir,
)
