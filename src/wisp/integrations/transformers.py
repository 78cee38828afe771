"""Hugging Face Transformers: ``Trainer(..., callbacks=[WispCallback(project=...)])``.

- at the start of training the run gets the ``TrainingArguments`` and the
  model's config as its config (one flat dict, arguments winning, as wandb does;
  plus ``model/num_parameters``);
- every ``Trainer.log`` (training loss, learning rate, evaluation metrics) is
  recorded at ``state.global_step``: ``eval_loss`` becomes ``eval/loss``,
  ``test_*`` becomes ``test/*``, everything else ``train/*``; the end-of-training
  figures (``train_runtime``, ``train_loss``, ...) go to the summary;
- only the main process (``state.is_world_process_zero``) records;
- at the end of training the callback finishes the run it started (a run that
  was already current is left to its owner; pass ``finish=False`` to keep it open,
  e.g. to evaluate afterwards).

Pass ``report_to=[]`` (or ``"none"``) in ``TrainingArguments`` so the Trainer
does not add other trackers.  Needs ``transformers``.
"""

from __future__ import annotations

from typing import Any

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised only without transformers
    raise ImportError(
        "wisp.integrations.transformers needs Hugging Face Transformers; install it with "
        "`pip install transformers`"
    ) from exc

import wisp
from wisp import _current
from wisp._run import Run
from wisp.integrations._common import config_safe, flatten_numbers

__all__ = ["WispCallback"]

_SUMMARY_KEYS = {
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
    "total_flos",
    "train_loss",
}


def _rename(key: str) -> str:
    for prefix in ("eval", "test"):
        if key.startswith(prefix + "_"):
            return f"{prefix}/{key[len(prefix) + 1 :]}"
    return f"train/{key}"


class WispCallback(TrainerCallback):
    """Records a ``transformers.Trainer`` run; arguments go to :func:`wisp.init`."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        dir: str | None = None,  # noqa: A002 - wisp.init's name
        *,
        finish: bool = True,
        **init_kwargs: Any,
    ) -> None:
        self._project = project
        self._name = name
        self._dir = dir
        self._finish = finish
        self._init_kwargs = init_kwargs
        self._run: Run | None = None
        self._owns_run = False

    @property
    def run(self) -> Run | None:
        """The run being recorded (None before training starts, and off the main process)."""
        return self._run

    def _setup(self, args: Any, state: Any, model: Any) -> Run | None:
        if not state.is_world_process_zero:
            return None
        run = self._run
        if run is not None and run.state == "running":
            return run
        current = wisp.run
        if current is not None:
            self._run, self._owns_run = current, False
        else:
            self._run = wisp.init(
                project=self._project, name=self._name, dir=self._dir, **self._init_kwargs
            )
            self._owns_run = True
        config: dict[str, Any] = {}
        model_config = getattr(model, "config", None)
        if model_config is not None and hasattr(model_config, "to_dict"):
            config.update(model_config.to_dict())
        if args is not None and hasattr(args, "to_dict"):
            config.update(args.to_dict())
        if model is not None and hasattr(model, "num_parameters"):
            config["model/num_parameters"] = model.num_parameters()
        self._run.config.update(config_safe(config))
        return self._run

    def on_train_begin(
        self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any
    ) -> None:
        self._setup(args, state, model)

    def on_log(
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        model: Any = None,
        **kwargs: Any,
    ) -> None:
        run = self._setup(args, state, model)
        if run is None:
            return
        numbers = flatten_numbers(logs)
        summary = {k: v for k, v in numbers.items() if k in _SUMMARY_KEYS}
        row = {_rename(k): v for k, v in numbers.items() if k not in _SUMMARY_KEYS}
        step = int(state.global_step)
        if row:
            if step >= run.step:
                run.log(row, step=step)
            else:
                row["train/global_step"] = step
                run.log(row)
        if summary:
            run.summary.update(
                {f"train/{k}" if k != "total_flos" else k: v for k, v in summary.items()}
            )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        run = self._run
        if run is None or not self._owns_run or not self._finish or run.state != "running":
            return
        if wisp.run is run:
            _current.run = None
        run.finish()
