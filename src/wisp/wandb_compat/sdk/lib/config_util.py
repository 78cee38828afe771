"""``wandb.sdk.lib.config_util``: ``ConfigError``.

wisp raises :class:`wisp.UsageError` for a config it cannot store; ``ConfigError`` is
that class, so ``except ConfigError`` in a library catches wisp's refusal.
"""

from __future__ import annotations

from wisp.errors import UsageError as ConfigError

__all__ = ["ConfigError"]
