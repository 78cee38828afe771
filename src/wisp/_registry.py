"""The runs of this process: live ones (for the exit hook, doctor, fork handling) and the
last few finished ones (for doctor).  Holds no Run internals: a run's own fork handling
is :meth:`wisp._run.Run.after_fork_in_child`."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["after_fork_in_child", "live_runs", "recent_runs", "register", "unregister"]

_live_runs: list[Run] = []
_recent_runs: list[Run] = []  # the last few finished runs, for doctor


def register(run: Run) -> None:
    """A run started by ``init()``: the exit hook and doctor see it until it finishes."""
    _live_runs.append(run)


def unregister(run: Run) -> None:
    """A run finished (or its fork segment closed): no longer live, kept among the recent."""
    from wisp import _current

    if _current.run is run:
        _current.run = None  # `if wandb.run:` is false after finish(), as in wandb
    _recent_runs.append(run)
    del _recent_runs[:-5]
    if run in _live_runs:
        _live_runs.remove(run)


def live_runs() -> list[Run]:
    """The runs recording in this process (started by ``init()``, not finished)."""
    return list(_live_runs)


def recent_runs() -> list[Run]:
    """The last few runs finished in this process, newest last."""
    return list(_recent_runs)


def after_fork_in_child() -> None:
    """Forked child: the parent's runs become inert no-ops that warn once per process.

    Only the forking thread exists in the child, so nothing here may wait on a
    lock another thread could have held at the fork: locks are replaced, never
    released or joined on.
    """
    for run in _live_runs:
        run.after_fork_in_child()
    _live_runs.clear()
