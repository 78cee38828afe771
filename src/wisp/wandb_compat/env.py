"""``wandb.env``: the names of wandb's environment variables (read by wisp, see
docs/settings.md) and ``set_entity``/``set_project``."""

from __future__ import annotations

import os

__all__ = ["ENTITY", "MODE", "PROJECT", "set_entity", "set_project"]

ENTITY = "WANDB_ENTITY"
PROJECT = "WANDB_PROJECT"
MODE = "WANDB_MODE"
DIR = "WANDB_DIR"
LOG_MODEL = "WANDB_LOG_MODEL"
WATCH = "WANDB_WATCH"


def set_entity(value: str, env: dict[str, str] | None = None) -> None:
    """Set ``WANDB_ENTITY``: the user or team whose ``entity/project`` later runs go to."""
    (os.environ if env is None else env)[ENTITY] = value


def set_project(value: str, env: dict[str, str] | None = None) -> None:
    """Set ``WANDB_PROJECT`` (wisp's default project when ``init()`` names none)."""
    (os.environ if env is None else env)[PROJECT] = value
