"""The ``wisp`` logger, imported on first use: ``logging`` costs milliseconds at import."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    import logging

__all__ = ["logger"]


def logger() -> logging.Logger:
    """``logging.getLogger("wisp")``: background failures are reported here, once each."""
    import logging

    return logging.getLogger("wisp")
