"""Sweeps: hyperparameter search with wandb's sweep file, Optuna's samplers, offline or online.

    import wisp
    sweep_id = wisp.sweep({"method": "random", "parameters": {"lr": {"min": 0.0, "max": 1.0}}})
    wisp.agent(sweep_id, function=train, count=10)

The state lives in ``<dir>/wisp/sweeps/<id>.db`` offline and in the wisp server online
(docs/sweeps.md).  Modules: ``_config`` (the sweep file), ``_controller`` (sampling over the
stored state), ``_local`` / ``_remote`` (the two stores), ``_agent`` (running trials).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from wisp._settings import Settings
    from wisp.sweeps._controller import SweepStore

__all__ = ["agent", "open_store", "set_state", "sweep", "sweep_status"]

_CONTROLS = {"stop": "stopped", "cancel": "cancelled", "resume": "running", "pause": "paused"}


def _settings(dir: str | None) -> Settings:  # noqa: A002
    from wisp._settings import Settings

    s = Settings.resolve()
    if dir is not None:
        s = s.replace(dir=os.fspath(dir))
    return s


def open_store(settings: Settings) -> tuple[SweepStore, Callable[[], SweepStore], str]:
    """(store, a factory for more of them, base dir): the server's when online, else local."""
    base = os.path.abspath(settings.dir or os.getcwd())
    online = settings.mode == "online" or (settings.mode is None and settings.server_url)
    if online:
        from wisp.sweeps._remote import RemoteStore

        def remote() -> SweepStore:
            return RemoteStore(settings.server_url, settings.api_key)

        return remote(), remote, base
    from wisp.sweeps._local import LocalStore

    def local() -> SweepStore:
        return LocalStore(base)

    return local(), local, base


def sweep(
    sweep: Mapping[str, Any] | str | os.PathLike[str],
    project: str | None = None,
    *,
    entity: str | None = None,
    dir: str | None = None,  # noqa: A002
    seed: int | None = None,
) -> str:
    """Create a sweep from a config dict (or a YAML/JSON file); returns its id.

    ``entity`` is accepted for ``import wisp as wandb`` and ignored.
    """
    from wisp.sweeps._config import load_sweep_file
    from wisp.sweeps._controller import new_sweep

    config = sweep if isinstance(sweep, dict) else None
    if config is None and isinstance(sweep, (str, os.PathLike)):
        config = load_sweep_file(sweep)
    elif config is None:
        config = dict(sweep)  # type: ignore[arg-type]
    record = new_sweep(config, project, seed)
    store, _factory, _base = open_store(_settings(dir))
    store.create_sweep(record)
    return str(record["id"])


def agent(
    sweep_id: str,
    function: Callable[[], Any] | None = None,
    count: int | None = None,
    *,
    entity: str | None = None,
    project: str | None = None,
    dir: str | None = None,  # noqa: A002
) -> int:
    """Run trials of ``sweep_id``: ``function()`` in this process, or the sweep's program.

    Returns how many trials ran.  ``entity`` and ``project`` are accepted for
    ``import wisp as wandb`` and ignored (the sweep knows its project).
    """
    from wisp.errors import UsageError
    from wisp.sweeps._agent import run_agent, run_in_process

    if count is not None and (not isinstance(count, int) or count <= 0):
        raise UsageError(f"agent() count must be a positive integer, got {count!r}")
    if function is not None and not callable(function):
        raise UsageError(f"agent() function must be callable, got {function!r}")
    sweep_id = _bare_id(sweep_id)
    store, factory, base = open_store(_settings(dir))
    if function is None:
        return run_agent(store, sweep_id, base, count=count)
    return run_in_process(store, factory, sweep_id, base, function, count=count)


def _bare_id(sweep_id: str) -> str:
    """``entity/project/id`` (wandb's long form) -> ``id``."""
    from wisp.errors import UsageError

    if not isinstance(sweep_id, str) or not sweep_id.strip("/"):
        raise UsageError(f"a sweep id must be a non-empty string, got {sweep_id!r}")
    return sweep_id.strip("/").rsplit("/", 1)[-1]


def set_state(sweep_id: str, action: str, *, dir: str | None = None) -> str:  # noqa: A002
    """``stop`` / ``cancel`` / ``pause`` / ``resume`` a sweep; returns its new state."""
    from wisp.errors import UsageError

    state = _CONTROLS.get(action)
    if state is None:
        raise UsageError(f"sweep action must be one of {', '.join(_CONTROLS)}, got {action!r}")
    sweep_id = _bare_id(sweep_id)
    store, _f, _b = open_store(_settings(dir))
    store.get_sweep(sweep_id)  # raises for an unknown sweep
    store.set_sweep_state(sweep_id, state)
    return state


def sweep_status(sweep_id: str, *, dir: str | None = None) -> dict[str, Any]:  # noqa: A002
    """The sweep and its trials, as stored."""
    sweep_id = _bare_id(sweep_id)
    store, _f, _b = open_store(_settings(dir))
    out = dict(store.get_sweep(sweep_id))
    out["trials"] = store.list_trials(sweep_id)
    return out
