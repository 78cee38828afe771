"""optuna-integration's documented WeightsAndBiasesCallback, unmodified: one study with a
run per trial (as_multirun) and one study in a single run."""

import json
import warnings

import optuna
import wandb
from optuna_integration.wandb import WeightsAndBiasesCallback

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.simplefilter("ignore", FutureWarning)  # the callback is deprecated since optuna 4.9


def objective(trial):
    x = trial.suggest_float("x", -10, 10)
    return (x - 2) ** 2


multi = WeightsAndBiasesCallback(wandb_kwargs={"project": "optuna-multi"}, as_multirun=True)
study = optuna.create_study(study_name="multi", sampler=optuna.samplers.RandomSampler(seed=0))
study.optimize(objective, n_trials=3, callbacks=[multi])

single = WeightsAndBiasesCallback(metric_name="loss", wandb_kwargs={"project": "optuna-single"})
study2 = optuna.create_study(study_name="single", sampler=optuna.samplers.RandomSampler(seed=1))
study2.optimize(objective, n_trials=3, callbacks=[single])
wandb.finish()

seen = {
    "multi": [{"x": t.params["x"], "value": t.value, "number": t.number} for t in study.trials],
    "single": [{"x": t.params["x"], "value": t.value, "number": t.number} for t in study2.trials],
}
print("RESULT " + json.dumps(seen))
