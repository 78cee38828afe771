"""Sweeps: hyperparameter search with wandb's sweep file, Optuna's samplers, offline or online.

    import wisp
    sweep_id = wisp.sweep({"method": "random", "parameters": {"lr": {"min": 0.0, "max": 1.0}}})
    wisp.agent(sweep_id, function=train, count=10)

The state lives in ``<dir>/wisp/sweeps/<id>.db`` offline and in the wisp server online
(docs/sweeps.md), where a sweep is named by its project and id: ``wisp.sweep()`` returns
``project/id`` there (``entity/project/id`` for an entity's project), and ``wisp.agent()``
takes any of ``id``, ``project/id`` and ``entity/project/id``.

Modules: ``_config`` (the sweep file), ``_controller`` (sampling over the
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


def _online(settings: Settings) -> bool:
    return settings.mode == "online" or bool(settings.mode is None and settings.server_url)


def open_store(
    settings: Settings, project: str | None = None
) -> tuple[SweepStore, Callable[[], SweepStore], str]:
    """(store, a factory for more of them, base dir): the server's when online (for the
    sweeps of ``project``), else local."""
    base = os.path.abspath(settings.dir or os.getcwd())
    if _online(settings):
        from wisp.sweeps._remote import RemoteStore

        def remote() -> SweepStore:
            return RemoteStore(settings.server_url, settings.api_key, project=project)

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
    """Create a sweep from a config dict (or a YAML/JSON file); returns its id: ``project/id``
    (``entity/project/id`` with an entity) on a server, where ids are unique per project
    (a sweep of no project goes to ``uncategorized``, as a run does), the bare id offline.
    """
    from wisp._init import _full_project
    from wisp._protocol import DEFAULT_PROJECT
    from wisp.sweeps._config import load_sweep_file
    from wisp.sweeps._controller import new_sweep

    config = sweep if isinstance(sweep, dict) else None
    if config is None and isinstance(sweep, (str, os.PathLike)):
        config = load_sweep_file(sweep)
    elif config is None:
        config = dict(sweep)  # type: ignore[arg-type]
    record = new_sweep(config, project, seed)
    if entity:  # as init(entity=...): the entity's project, "uncategorized" for none
        record["project"] = _full_project(record["project"] or DEFAULT_PROJECT, entity)
    settings = _settings(dir)
    if not _online(settings):
        local = _open_local(settings)
        try:
            local.create_sweep(record)
        finally:
            _close(local)
        return str(record["id"])
    record["project"] = record["project"] or DEFAULT_PROJECT
    store, _factory, _base = open_store(settings, record["project"])
    try:
        store.create_sweep(record)
    finally:
        _close(store)
    return f"{record['project']}/{record['id']}"


def _open_local(settings: Settings) -> SweepStore:
    from wisp.sweeps._local import LocalStore

    return LocalStore(os.path.abspath(settings.dir or os.getcwd()))


def _open(
    sweep_id: str,
    dir: str | None,  # noqa: A002
    project: str | None = None,
) -> tuple[SweepStore, Callable[[], SweepStore], str, str]:
    """(store, factory, base dir, bare id) for a sweep named ``id``, ``project/id`` or
    ``entity/project/id``: online, the store of its project (``project`` for a bare id, else
    the one readable sweep with that id on the server); offline the directory's."""
    from wisp.sweeps._remote import split_id

    named, bare = split_id(sweep_id)
    settings = _settings(dir)
    where = named or project
    if _online(settings) and where is None:
        from wisp.sweeps._remote import RemoteStore

        finder = RemoteStore(settings.server_url, settings.api_key)
        try:
            where = finder.resolve(bare)
        finally:
            finder.close()
    store, factory, base = open_store(settings, where)
    return store, factory, base, bare


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

    Returns how many trials ran.  ``sweep_id`` is ``id``, ``project/id`` or
    ``entity/project/id``; ``project`` (and ``entity``) name the project of a bare id.
    """
    from wisp._init import _full_project
    from wisp.errors import UsageError
    from wisp.sweeps._agent import run_agent, run_in_process

    if count is not None and (not isinstance(count, int) or count <= 0):
        raise UsageError(f"agent() count must be a positive integer, got {count!r}")
    if function is not None and not callable(function):
        raise UsageError(f"agent() function must be callable, got {function!r}")
    if project is not None:
        project = _full_project(project, entity)
    store, factory, base, sweep_id = _open(sweep_id, dir, project)
    if function is None:
        return run_agent(store, sweep_id, base, count=count)
    return run_in_process(store, factory, sweep_id, base, function, count=count)


def set_state(sweep_id: str, action: str, *, dir: str | None = None) -> str:  # noqa: A002
    """``stop`` / ``cancel`` / ``pause`` / ``resume`` a sweep; returns its new state."""
    from wisp.errors import UsageError

    state = _CONTROLS.get(action)
    if state is None:
        raise UsageError(f"sweep action must be one of {', '.join(_CONTROLS)}, got {action!r}")
    store, _f, _b, sweep_id = _open(sweep_id, dir)
    try:
        store.get_sweep(sweep_id)  # raises for an unknown sweep
        store.set_sweep_state(sweep_id, state)
    finally:
        _close(store)
    return state


def sweep_status(sweep_id: str, *, dir: str | None = None) -> dict[str, Any]:  # noqa: A002
    """The sweep and its trials, as stored."""
    store, _f, _b, sweep_id = _open(sweep_id, dir)
    try:
        out = dict(store.get_sweep(sweep_id))
        out["trials"] = store.list_trials(sweep_id)
    finally:
        _close(store)
    return out


def _close(store: SweepStore) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()
