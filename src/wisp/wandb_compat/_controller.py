"""``wandb.controller()``: wandb's local sweep controller, over wisp's sweeps.

In wisp every agent picks its trials itself from the sweep's store (docs/sweeps.md), so
there is no separate controller process: ``controller(config).create()`` makes the sweep,
``run()`` and ``step()`` have nothing to schedule and return, and ``done()`` says whether
the sweep has no trial left to hand out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wisp.errors import UsageError

__all__ = ["SweepController", "controller"]


class SweepController:
    """What ``wandb.controller()`` returns: ``sweep_id``, ``configure_*``, ``create``,
    ``run``, ``step``, ``done``."""

    def __init__(
        self, sweep_id_or_config: str | Mapping[str, Any] | None, project: str | None
    ) -> None:
        self._project = project
        self.sweep_id: str | None = None
        self._config: dict[str, Any] = {}
        if isinstance(sweep_id_or_config, str):
            from wisp.sweeps._remote import split_id

            split_id(sweep_id_or_config)  # id, project/id or entity/project/id
            self.sweep_id = sweep_id_or_config.strip("/")
        elif sweep_id_or_config is not None:
            self._config = dict(sweep_id_or_config)

    def _configure(self, **items: Any) -> None:
        if self.sweep_id is not None:
            raise UsageError(f"sweep {self.sweep_id} exists: configure before create()")
        self._config.update({k: v for k, v in items.items() if v is not None})

    def configure_search(self, search: str, **kwargs: Any) -> None:
        self._configure(method=search)

    def configure_stopping(self, stopping: str, **kwargs: Any) -> None:
        self._configure(early_terminate={"type": stopping, **kwargs})

    def configure_metric(self, metric: str, goal: str | None = None) -> None:
        self._configure(metric={"name": metric, **({"goal": goal} if goal else {})})

    def configure_program(self, program: str) -> None:
        self._configure(program=program)

    def configure_name(self, name: str) -> None:
        self._configure(name=name)

    def configure_description(self, description: str) -> None:
        self._configure(description=description)

    def configure_parameter(self, name: str, **spec: Any) -> None:
        params = dict(self._config.get("parameters") or {})
        params[name] = {k: v for k, v in spec.items() if v is not None}
        self._configure(parameters=params)

    def configure_controller(self, type: str) -> None:  # noqa: A002 - wandb's name
        """Accepted: wisp's agents are the controller."""

    def configure(self, sweep_dict_or_config: Mapping[str, Any]) -> None:
        self._configure(**dict(sweep_dict_or_config))

    def create(self, from_dict: bool = False) -> str:
        """Create the sweep (once); returns its id."""
        if self.sweep_id is None:
            import wisp.sweeps

            self.sweep_id = wisp.sweeps.sweep(self._config, project=self._project)
        return self.sweep_id

    def run(self, verbose: bool = False, print_status: bool = True, **kwargs: Any) -> None:
        """Creates the sweep if needed; wisp's agents schedule the trials themselves."""
        self.create()

    def step(self) -> None:
        self.create()

    def done(self) -> bool:
        """Whether the sweep has nothing left to hand out (``wisp sweep status``)."""
        from wisp.sweeps import _open

        store, _, _, bare = _open(self.create(), None, self._project)
        sweep = store.get_sweep(bare)
        return str(sweep.get("state", "")) in ("finished", "stopped", "cancelled")


def controller(
    sweep_id_or_config: str | Mapping[str, Any] | None = None,
    entity: str | None = None,
    project: str | None = None,
) -> SweepController:
    """wandb's ``controller()`` on wisp's sweeps (see the module docstring)."""
    return SweepController(sweep_id_or_config, project)
