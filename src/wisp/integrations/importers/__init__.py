"""Importers: wandb, TensorBoard, MLflow, Neptune and Aim runs become normal wisp run directories.

    from wisp.integrations.importers import import_wandb, import_tensorboard
    import_wandb(["wandb/"], dir=".")              # run-*.wandb files -> ./wisp/run-*/
    import_tensorboard("runs/", dir=".")           # each event-file folder -> one run
    import_mlflow("mlruns", dir=".")               # or "http://mlflow-server:5000"
    import_neptune("neptune_exports/", dir=".")    # neptune-exporter parquet + files
    import_aim("path/to/repo", dir=".")            # the folder holding .aim, read by aim

wandb, TensorBoard and Aim need the other tool's package to read its files, Neptune
needs ``pyarrow``; MLflow needs nothing.  Each says so when a package is missing.
``wisp import wandb|tensorboard|mlflow|neptune|aim`` calls these.
"""

from __future__ import annotations

from typing import Any

__all__ = ["import_aim", "import_mlflow", "import_neptune", "import_tensorboard", "import_wandb"]


def import_wandb(*args: Any, **kwargs: Any) -> list[str]:
    """See :func:`wisp.integrations.importers._wandb.import_wandb`."""
    from wisp.integrations.importers._wandb import import_wandb as run

    return run(*args, **kwargs)


def import_tensorboard(*args: Any, **kwargs: Any) -> list[str]:
    """See :func:`wisp.integrations.importers._tensorboard.import_tensorboard`."""
    from wisp.integrations.importers._tensorboard import import_tensorboard as run

    return run(*args, **kwargs)


def import_mlflow(*args: Any, **kwargs: Any) -> Any:
    """See :func:`wisp.integrations.importers._mlflow.import_mlflow`."""
    from wisp.integrations.importers._mlflow import import_mlflow as run

    return run(*args, **kwargs)


def import_neptune(*args: Any, **kwargs: Any) -> Any:
    """See :func:`wisp.integrations.importers._neptune.import_neptune`."""
    from wisp.integrations.importers._neptune import import_neptune as run

    return run(*args, **kwargs)


def import_aim(*args: Any, **kwargs: Any) -> Any:
    """See :func:`wisp.integrations.importers._aim.import_aim`."""
    from wisp.integrations.importers._aim import import_aim as run

    return run(*args, **kwargs)
