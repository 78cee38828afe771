"""``wandb.sdk.lib.telemetry``: wandb's usage telemetry.  wisp records none.

``context()`` yields an object on which any attribute can be set, and keeps nothing.
"""

from __future__ import annotations

import contextlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["context"]


class _Anything:
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Anything()
        object.__setattr__(self, name, value)
        return value


@contextlib.contextmanager
def context(run: Any = None, obj: Any = None) -> Iterator[Any]:
    """A telemetry record to fill in; wisp discards it (it is usage telemetry, not data)."""
    yield _Anything()
