"""``wisp.tee_wandb()``: keep using the real wandb and record every run in wisp too.

For a team moving gradually: with the real ``wandb`` installed, ``wisp.tee_wandb()`` wraps
``wandb.init`` so each wandb run also starts a wisp run (same project, name, id, config,
tags, notes, group, job type), and that run's ``log``/``finish`` (and the module's
``wandb.log``/``wandb.finish``, which wandb binds to the run) feed the wisp run as well:

    import wandb, wisp
    wisp.tee_wandb()                      # before wandb.init
    run = wandb.init(project="mnist", config={"lr": 1e-3})
    wandb.log({"loss": 0.3})              # recorded by wandb and by wisp, same step
    run.summary["best"] = 0.9
    wandb.finish()                        # finishes both; config and summary copied last

Numbers, strings, lists, numpy arrays and tensors are logged as wisp logs them;
``wandb.Histogram`` becomes ``wisp.Histogram`` and ``wandb.Image`` ``wisp.Image``; other
wandb media are left out of the wisp run (one warning names them).  The wisp run follows
wisp's settings (``WISP_DIR``, ``WISP_SERVER_URL``, ...); ``tee_wandb(**init_kwargs)``
adds arguments for every wisp run.  ``untee_wandb()`` restores wandb's functions.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["tee_wandb", "untee_wandb"]

_ORIGINAL: dict[str, Any] = {}
_WARNED: set[str] = set()
_INIT_ARGS = ("name", "tags", "notes", "group", "job_type")


def _real_wandb() -> Any:
    from wisp.errors import UsageError

    current = sys.modules.get("wandb")
    if current is not None and getattr(current, "__name__", "") == "wisp.wandb_compat":
        raise UsageError(
            "tee_wandb(): `wandb` is wisp's compatibility module here, so wandb's calls already "
            "record wisp runs; tee_wandb() is for the real wandb"
        )
    try:
        import wandb
    except ImportError:
        raise ImportError("tee_wandb() needs the real wandb: pip install wandb") from None
    if getattr(wandb, "_WISP_DIST", None) is not None or wandb.__name__ == "wisp.wandb_compat":
        raise UsageError("tee_wandb(): the installed `wandb` is wisp's compatibility module")
    return wandb


def tee_wandb(**init_kwargs: Any) -> None:
    """Make every ``wandb.init`` of this process also record a wisp run (module docstring).

    Call it before ``wandb.init``; calling it again changes the extra ``init_kwargs``."""
    wandb = _real_wandb()
    if "init" not in _ORIGINAL:
        _ORIGINAL["init"] = wandb.init
    original = _ORIGINAL["init"]

    def init(*args: Any, **kwargs: Any) -> Any:
        run = original(*args, **kwargs)
        if run is not None and getattr(run, "_wisp_tee", None) is None:
            _attach(wandb, run, init_kwargs)
        return run

    init.__doc__ = original.__doc__
    init.__wrapped__ = original  # type: ignore[attr-defined]
    wandb.init = init


def untee_wandb() -> None:
    """Give ``wandb.init`` back; runs already teed keep recording until they finish."""
    if "init" in _ORIGINAL:
        _real_wandb().init = _ORIGINAL.pop("init")


def _attach(wandb: Any, run: Any, init_kwargs: dict[str, Any]) -> None:
    import wisp

    args: dict[str, Any] = {
        "project": run.project,
        "id": run.id,
        "config": _plain(dict(run.config.as_dict())),
        "reinit": "create_new",
    }
    for name in _INIT_ARGS:
        value = getattr(run, name, None)
        if value:
            args[name] = list(value) if name == "tags" else value
    args.update(init_kwargs)
    mine = wisp.init(**args)
    log, finish = run.log, run.finish

    def tee_log(
        data: dict[str, Any], step: int | None = None, commit: bool | None = None, **kwargs: Any
    ) -> None:
        at = run.step if step is None else step  # the step wandb gives this row
        log(data, step=step, commit=commit, **kwargs)
        row = _convert(wandb, data)
        if row and mine.state == "running":
            mine.log(row, step=at, commit=commit)

    def tee_finish(exit_code: int | None = None, **kwargs: Any) -> None:
        if mine.state == "running":
            _copy_last(run, mine)
        finish(exit_code=exit_code, **kwargs)
        if mine.state == "running":
            mine.finish(exit_code or 0)

    run.log, run.finish = tee_log, tee_finish
    object.__setattr__(run, "_wisp_tee", mine)  # wandb freezes its Run against new names
    if getattr(wandb, "run", None) is run:  # wandb bound its module functions to the run
        wandb.log = tee_log


def _copy_last(run: Any, mine: Any) -> None:
    """The wandb run's final config, and the summary values it holds that are plain."""
    mine.config.update(_plain(dict(run.config.as_dict())), allow_val_change=True)
    summary = {}
    for key, value in dict(run.summary).items():
        if key.startswith("_"):
            continue
        plain = _plain(value)
        if isinstance(plain, (int, float, str, bool)) or (
            isinstance(plain, list) and all(isinstance(v, (int, float, str, bool)) for v in plain)
        ):
            summary[key] = plain
    if summary:
        mine.summary.update(summary)


def _plain(value: Any) -> Any:
    """``value`` with wandb's mapping types as dicts, recursively."""
    if hasattr(value, "items") and not isinstance(value, dict):
        value = dict(value.items())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _convert(wandb: Any, data: dict[str, Any]) -> dict[str, Any]:
    """What wisp can log of a ``wandb.log`` row (see the module docstring)."""
    import wisp

    out: dict[str, Any] = {}
    skipped = []
    for key, value in data.items():
        if isinstance(value, dict):
            inner = _convert(wandb, value)
            if inner:
                out[key] = inner
            continue
        if isinstance(value, wandb.Histogram):
            out[key] = wisp.Histogram(np_histogram=(value.histogram, value.bins))
        elif isinstance(value, wandb.Image):
            image = getattr(value, "image", None)
            if image is None:
                skipped.append(key)
                continue
            import numpy as np

            out[key] = wisp.Image(np.asarray(image), caption=getattr(value, "_caption", None))
        elif type(value).__module__.startswith("wandb."):
            skipped.append(key)
        else:
            out[key] = value
    new = [k for k in skipped if k not in _WARNED]
    if new:
        import warnings

        from wisp.errors import WispWarning

        _WARNED.update(new)
        warnings.warn(
            f"tee_wandb(): {', '.join(new)} are wandb media wisp does not convert; "
            "they are recorded by wandb only",
            WispWarning,
            stacklevel=3,
        )
    return out
