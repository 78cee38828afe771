"""Importers: existing wandb and TensorBoard runs become normal wisp run directories.

    from wisp.integrations.importers import import_wandb, import_tensorboard
    import_wandb(["wandb/"], dir=".")              # run-*.wandb files -> ./wisp/run-*/
    import_tensorboard("runs/", dir=".")           # each event-file folder -> one run

Each needs the other tool's package to read its files (``wandb`` /
``tensorboard``) and says so when it is missing.  ``wisp import wandb|tensorboard``
calls these.
"""

from __future__ import annotations

from typing import Any

__all__ = ["import_tensorboard", "import_wandb"]


def import_wandb(*args: Any, **kwargs: Any) -> list[str]:
    """See :func:`wisp.integrations.importers._wandb.import_wandb`."""
    from wisp.integrations.importers._wandb import import_wandb as run

    return run(*args, **kwargs)


def import_tensorboard(*args: Any, **kwargs: Any) -> list[str]:
    """See :func:`wisp.integrations.importers._tensorboard.import_tensorboard`."""
    from wisp.integrations.importers._tensorboard import import_tensorboard as run

    return run(*args, **kwargs)
