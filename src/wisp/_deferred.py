"""Deferred values: what ``log()`` enqueues for work done later on the writer thread.

Its own module so media types and tensor converters depend on it alone, not on
``_values`` (which imports them lazily): no import cycle.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Protocol

    class ResolveContext(Protocol):
        """What a deferred value may use on the writer thread."""

        @property
        def media_dir(self) -> str: ...

        def save_media(self, data: bytes, suffix: str) -> str:
            """Store bytes under their content hash; return the path relative to the run dir."""
            ...


__all__ = ["Deferred"]


class Deferred:
    """A value whose conversion to JSON is done on the writer thread.

    Subclasses snapshot what they need in ``__init__`` (on the calling thread,
    cheaply) and do the expensive part in :meth:`resolve`.
    """

    __slots__ = ()

    def at_log(self, key: str) -> Deferred:
        """Called by ``log()`` on the calling thread: what to enqueue for ``key``.

        A mutable value (a Table that may grow later) returns a frozen copy;
        raising UsageError here names the key.
        """
        return self

    def estimate_bytes(self) -> int:
        """The size of the largest single object this value will store (checked
        against the ``max_value_bytes`` setting before anything is enqueued)."""
        return 0

    def resolve(self, ctx: ResolveContext) -> Any:
        raise NotImplementedError
