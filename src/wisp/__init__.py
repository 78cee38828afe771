"""wisp: an experiment tracker that costs nothing to import and never stalls training.

    import wisp
    run = wisp.init(project="mnist", config={"lr": 1e-3})
    for step in range(100):
        wisp.log({"loss": 1 / (step + 1)})
    run.finish()

Only the names below load with ``import wisp``; everything else (the writer,
numpy support, the reader, the server) is imported on first use.
"""

from __future__ import annotations

from wisp.errors import FatalApiError, RunStateError, UsageError, WispError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs ~15 ms
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from wisp import plot
    from wisp._config import Config
    from wisp._doctor import doctor
    from wisp._metric import Metric
    from wisp._reader import RunData, open_run
    from wisp._run import Run
    from wisp._settings import Settings
    from wisp._summary import Summary
    from wisp.api import Api
    from wisp.artifacts import Artifact
    from wisp.media import Audio, Histogram, Html, Image, Object3D, Table, Video
    from wisp.reports import Report
    from wisp.sweeps import agent, sweep

__version__ = "0.1.0"

__all__ = [
    "AlertLevel",
    "Api",
    "Artifact",
    "Audio",
    "Config",
    "Histogram",
    "Html",
    "Image",
    "Metric",
    "Object3D",
    "Report",
    "Run",
    "RunData",
    "RunStateError",
    "Settings",
    "Summary",
    "Table",
    "UsageError",
    "Video",
    "WispError",
    "agent",
    "alert",
    "config",
    "define_metric",
    "doctor",
    "finish",
    "flush",
    "init",
    "install_as_wandb",
    "log",
    "log_artifact",
    "log_code",
    "login",
    "mark_preempting",
    "open_run",
    "plot",
    "restore",
    "run",
    "save",
    "summary",
    "sweep",
    "sync",
    "unwatch",
    "use_artifact",
    "watch",
]

#: The current run (set by :func:`init`, cleared by :func:`finish`), or None.
run: Run | None = None

_LAZY = {
    "Run": ("wisp._run", "Run"),
    "Config": ("wisp._config", "Config"),
    "Summary": ("wisp._summary", "Summary"),
    "Settings": ("wisp._settings", "Settings"),
    "open_run": ("wisp._reader", "open_run"),
    "Api": ("wisp.api", "Api"),
    "Report": ("wisp.reports", "Report"),
    "flush": ("wisp._hooks", "flush"),
    "RunData": ("wisp._reader", "RunData"),
    "doctor": ("wisp._doctor", "doctor"),
    "sync": ("wisp._upload._sync", "sync"),
    "errors": ("wisp.errors", None),
    "Artifact": ("wisp.artifacts._artifact", "Artifact"),
    "Histogram": ("wisp.media", "Histogram"),
    "Image": ("wisp.media", "Image"),
    "Table": ("wisp.media", "Table"),
    "Audio": ("wisp.media", "Audio"),
    "Video": ("wisp.media", "Video"),
    "Html": ("wisp.media", "Html"),
    "Object3D": ("wisp.media", "Object3D"),
    "plot": ("wisp.plot", None),
    # wandb-shaped helpers (src/wisp/integrations)
    "watch": ("wisp.integrations._watch", "watch"),
    "unwatch": ("wisp.integrations._watch", "unwatch"),
    "save": ("wisp.integrations._files", "save"),
    "restore": ("wisp.integrations._files", "restore"),
    "log_code": ("wisp.integrations._files", "log_code"),
    "Metric": ("wisp._metric", "Metric"),
    "alert": ("wisp.integrations._alert", "alert"),
    "AlertLevel": ("wisp.integrations._alert", "AlertLevel"),
    "login": ("wisp.integrations._alert", "login"),
    # sweeps (src/wisp/sweeps)
    "sweep": ("wisp.sweeps", "sweep"),
    # `import wandb` resolving to wisp (src/wisp/wandb_compat)
    "install_as_wandb": ("wisp.wandb_compat", "install"),
    "agent": ("wisp.sweeps", "agent"),
}


def init(
    project: str | None = None,
    name: str | None = None,
    config: Mapping[str, Any] | Any | None = None,
    tags: list[str] | tuple[str, ...] | None = None,
    notes: str | None = None,
    group: str | None = None,
    job_type: str | None = None,
    dir: str | None = None,  # noqa: A002 - the public name users expect
    mode: str | None = None,
    id: str | None = None,  # noqa: A002
    resume: str | bool | None = None,
    settings: Settings | Mapping[str, Any] | None = None,
    ranks: str | None = None,
    **wandb_only: Any,
) -> Run:
    """Start a run (finishing live ones first) and make it the current run.

    wandb's ``reinit``: ``"create_new"`` keeps live runs and leaves ``wisp.run``
    alone, ``"return_previous"`` (or False) returns the newest live run, and
    ``"finish_previous"``/``"default"``/True finish live runs first (wisp's default).
    ``entity`` (a user or team on the server) files the run under ``entity/project``.
    Other arguments that only wandb knows (``save_code``, ...) are accepted and ignored
    with one warning, so ``import wisp as wandb`` works; any other unknown argument raises
    UsageError.
    """
    from wisp._init import start_run

    refused: WispError | None = None
    try:
        reinit, entity = wandb_only.get("reinit"), wandb_only.get("entity")
        if wandb_only:
            from wisp._init import wandb_only_args

            code = init.__code__
            own = code.co_varnames[: code.co_argcount]  # init()'s own parameters
            config = wandb_only_args(wandb_only, config, own)
        how = "finish_previous"
        if reinit is not None:
            from wisp._wandb_env import reinit_mode

            how = reinit_mode(reinit)
            if how == "return_previous":
                from wisp._run import live_runs

                live = live_runs()
                if live:
                    return live[-1]
        new = start_run(
            project=project,
            name=name,
            config=config,
            tags=tags,
            notes=notes,
            group=group,
            job_type=job_type,
            dir=dir,
            mode=mode,
            id=id,
            resume=resume,
            settings=settings,
            ranks=ranks,
            finish_previous=how == "finish_previous",
            entity=entity,
        )
    except (UsageError, FatalApiError) as exc:
        # the caller's mistake (a bad argument or setting, a refused key): the message says
        # it all, so the traceback is the caller's line and the one below, not wisp's insides
        refused = exc.with_traceback(None)
    if refused is not None:
        raise refused  # init() refused: the message below says why
    if how != "create_new":  # as in wandb: create_new leaves wisp.run alone
        global run
        run = new
    return new


def _current(what: str) -> Run:
    if run is None:
        raise RunStateError(f"wisp.{what} needs a run: call wisp.init() first")
    return run


def log(data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    """Log ``data`` to the current run (see :meth:`Run.log`)."""
    r = run
    if r is None:
        from wisp._hooks import log_without_run

        log_without_run()  # raises RunStateError, except in a multiprocessing child
        return
    r.log(data, step, commit)


def define_metric(
    name: str,
    step_metric: str | Metric | None = None,
    step_sync: bool | None = None,
    hidden: bool | None = None,
    summary: str | None = None,
    goal: str | None = None,
    overwrite: bool | None = None,
) -> Metric:
    """Describe metrics of the current run (see :meth:`Run.define_metric`)."""
    return _current("define_metric()").define_metric(
        name, step_metric, step_sync, hidden, summary, goal, overwrite
    )


def mark_preempting() -> None:
    """Record that the current run is about to be preempted (see :meth:`Run.mark_preempting`)."""
    _current("mark_preempting()").mark_preempting()


def finish(exit_code: int = 0) -> None:
    """Finish the current run, if any.  Safe to call twice."""
    global run
    r = run
    if r is not None:
        run = None
        r.finish(exit_code)


def log_artifact(
    artifact_or_path: Any,
    name: str | None = None,
    type: str | None = None,  # noqa: A002 - wandb's name
    aliases: list[str] | None = None,
    tags: list[str] | None = None,
) -> Any:
    """Log an artifact to the current run (see :meth:`Run.log_artifact`)."""
    return _current("log_artifact()").log_artifact(artifact_or_path, name, type, aliases, tags)


def use_artifact(
    artifact_or_name: Any,
    type: str | None = None,  # noqa: A002
    aliases: list[str] | None = None,
    use_as: str | None = None,
) -> Any:
    """Use an artifact version in the current run (see :meth:`Run.use_artifact`)."""
    return _current("use_artifact()").use_artifact(artifact_or_name, type, aliases, use_as)


def __getattr__(name: str) -> Any:
    if name in ("config", "summary"):
        r = run
        if r is None:  # a placeholder that raises on use, as wandb's (hasattr() is safe)
            from wisp._preinit import placeholder

            return placeholder(name)
        return getattr(r, name)
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'wisp' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(target[0])
    value = module if target[1] is None else getattr(module, target[1])
    if name not in ("config", "summary"):
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
