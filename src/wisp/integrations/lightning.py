"""PyTorch Lightning: ``Trainer(logger=WispLogger(project=...))``.

- hyperparameters (``save_hyperparameters()``, datamodule ones) -> the run's config;
- ``log_metrics`` records at Lightning's step (rows with the same step merge, so
  train and validation metrics of one step share a row); a step lower than one
  already recorded (e.g. ``trainer.test()`` after ``fit()``) is logged at the
  run's current step with the original in ``trainer/global_step``;
- only rank zero records (other ranks see a no-op experiment);
- ``finalize(status)`` finishes the run the logger started: ``success`` ->
  finished, ``failed`` -> failed, ``interrupted`` -> killed;
- ``log_model=True`` records the checkpoints at the end, ``"all"`` as they are
  written, copied into the run under ``files/checkpoints/`` (FILE records).

Works next to other loggers: ``Trainer(logger=[WispLogger(), CSVLogger(...)])``.
Needs ``lightning`` (``pip install lightning``).
"""

from __future__ import annotations

import logging
import os
import sys
from argparse import Namespace
from collections.abc import Mapping
from typing import Any

try:
    from lightning.fabric.loggers.logger import rank_zero_experiment
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers.logger import Logger
    from lightning.pytorch.utilities import rank_zero_only
except ImportError as exc:  # pragma: no cover - exercised only without lightning
    raise ImportError(
        "wisp.integrations.lightning needs PyTorch Lightning; install it with "
        "`pip install lightning`"
    ) from exc

import wisp
from wisp import _current
from wisp._run import Run
from wisp.errors import WriterError
from wisp.integrations._common import config_safe, state_for
from wisp.integrations._files import save_file

__all__ = ["WispLogger"]

log = logging.getLogger("wisp")


class WispLogger(Logger):
    """A Lightning logger that records into a wisp run.

    Arguments other than those below go to :func:`wisp.init` (``group``,
    ``notes``, ``mode``, ``settings``, ...).  If a run is already current
    (``wisp.init()`` was called), the logger records into it and leaves
    finishing it to its owner.
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        save_dir: str | os.PathLike[str] | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        tags: list[str] | None = None,
        log_model: bool | str = False,
        prefix: str = "",
        run: Run | None = None,
        **init_kwargs: Any,
    ) -> None:
        super().__init__()
        if log_model not in (False, True, "all"):
            raise wisp.UsageError(
                f"WispLogger log_model must be False, True or 'all', got {log_model!r}"
            )
        self._project = project
        self._name = name
        self._save_dir = None if save_dir is None else os.fspath(save_dir)
        self._config = dict(config or {})
        self._tags = tags
        self._log_model = log_model
        self._prefix = prefix
        self._init_kwargs = init_kwargs
        self._run = run
        self._owns_run = False
        self._checkpoint_callback: Any = None
        self._logged_ckpt: dict[str, float] = {}

    # -- identity ----------------------------------------------------------------------------

    @property
    def name(self) -> str | None:
        return self._project or (self._run.project if self._run is not None else None)

    @property
    def version(self) -> str | None:
        return None if self._run is None else self._run.id

    @property
    def save_dir(self) -> str | None:
        return self._save_dir

    @property
    def log_dir(self) -> str | None:
        return None if self._run is None else self._run.dir

    # -- the run -----------------------------------------------------------------------------

    @property
    @rank_zero_experiment
    def experiment(self) -> Run:
        """The wisp run (started on first use, on rank zero only; finished by ``finalize``)."""
        return self._run if self._run is not None else self._live_run()

    def _live_run(self) -> Run:
        run = self._run
        if run is not None and run.state == "running":
            return run
        current = wisp.run
        if current is not None and run is None:
            self._run, self._owns_run = current, False
            return current
        kwargs = dict(self._init_kwargs)
        if run is not None:  # finished by finalize(); e.g. trainer.test() after fit()
            kwargs.setdefault("group", run.group or run.id)
        self._run = wisp.init(
            project=self._project,
            name=self._name,
            dir=self._save_dir,
            config=self._config or None,
            tags=self._tags,
            **kwargs,
        )
        self._owns_run = True
        self._logged_ckpt.clear()
        return self._run

    @rank_zero_only
    def log_hyperparams(
        self, params: dict[str, Any] | Namespace | Any, *args: Any, **kwargs: Any
    ) -> None:
        if isinstance(params, Namespace):
            params = vars(params)
        if params is None:
            return
        if not isinstance(params, Mapping):
            params = dict(params)
        self._live_run().config.update(config_safe(dict(params)))

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        run = self._live_run()
        row = {
            f"{self._prefix}{self.LOGGER_JOIN_CHAR}{k}" if self._prefix else k: v
            for k, v in metrics.items()
        }
        if step is None:
            run.log(row)
        elif step >= run.step:
            run.log(row, step=step)
        else:
            row["trainer/global_step"] = step
            run.log(row)

    @rank_zero_only
    def log_graph(self, model: Any, input_array: Any = None) -> None:
        return None

    # -- checkpoints -------------------------------------------------------------------------

    @rank_zero_only
    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        self._checkpoint_callback = checkpoint_callback
        if self._log_model == "all":
            self._record_checkpoints(checkpoint_callback)

    def _record_checkpoints(self, cb: Any) -> None:
        if not isinstance(cb, ModelCheckpoint):
            return
        run = self._live_run()
        paths: dict[str, Any] = {}
        for path, score in (getattr(cb, "best_k_models", None) or {}).items():
            paths[path] = score
        for path in (cb.last_model_path, cb.best_model_path):
            if path:
                paths.setdefault(path, None)
        for path, score in sorted(paths.items()):
            if not os.path.isfile(path):
                continue
            mtime = os.path.getmtime(path)
            if self._logged_ckpt.get(path) == mtime:
                continue
            self._logged_ckpt[path] = mtime
            if hasattr(score, "item"):
                score = score.item()
            save_file(
                run,
                path,
                f"checkpoints/{os.path.basename(path)}",
                kind="checkpoint",
                extra={
                    "score": score,
                    "monitor": cb.monitor,
                    "best": os.path.abspath(path) == os.path.abspath(cb.best_model_path or ""),
                    "step": run.step,
                },
            )

    # -- the end -----------------------------------------------------------------------------

    @rank_zero_only
    def save(self) -> None:
        return None

    @rank_zero_only
    def finalize(self, status: str) -> None:
        run = self._run
        if run is None or run.state != "running":
            return
        code, state = state_for(status)
        if code == 1 and isinstance(sys.exc_info()[1], KeyboardInterrupt):
            code, state = 130, "killed"  # Lightning reports Ctrl-C as "failed"
        if self._log_model and self._checkpoint_callback is not None and code == 0:
            self._record_checkpoints(self._checkpoint_callback)
        if not self._owns_run:
            return
        if wisp.run is run:
            _current.run = None
        try:
            run.finish(code, state=state)
        except WriterError:
            if code == 0:
                raise
            log.warning("wisp: run %s did not finish cleanly", run.id, exc_info=True)
