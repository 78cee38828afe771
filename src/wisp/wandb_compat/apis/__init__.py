"""``wandb.apis``: the public API (``wandb.apis.public``) is ``wisp.Api`` (docs/api.md)."""

from __future__ import annotations

from wisp.wandb_compat.apis import public

__all__ = ["public"]
