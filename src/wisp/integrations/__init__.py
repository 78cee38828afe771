"""Integrations: training frameworks, the wandb-shaped API and importers.

Nothing here is imported by ``import wisp``; each submodule imports its
framework inside the functions that need it.

- :mod:`wisp.integrations.lightning`     ``WispLogger`` for PyTorch Lightning
- :mod:`wisp.integrations.transformers`  ``WispCallback`` for Hugging Face ``Trainer``
- :mod:`wisp.integrations.keras`         ``WispCallback`` for Keras 3
- :mod:`wisp.integrations.importers`     ``import_wandb`` and ``import_tensorboard``
- ``wisp.watch`` / ``wisp.save`` / ``wisp.alert``: the wandb-shaped helpers
"""

from __future__ import annotations

__all__: list[str] = []
