"""The ``wisp`` logger, imported on first use: ``logging`` costs milliseconds at import."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    import logging

__all__ = ["logger", "warn_once", "warn_once_per"]

_warned_pid = 0


def logger() -> logging.Logger:
    """``logging.getLogger("wisp")``: background failures are reported here, once each."""
    import logging

    return logging.getLogger("wisp")


def warn_once(message: str, stacklevel: int = 3) -> None:
    """One WispWarning per process; under ``-W error`` it is logged instead of raised."""
    global _warned_pid
    pid = os.getpid()
    if _warned_pid == pid:
        return
    _warned_pid = pid
    import warnings

    from wisp.errors import WispWarning

    try:
        warnings.warn(message, WispWarning, stacklevel=stacklevel)
    except WispWarning:
        # warnings are errors here (pytest, -W error): a no-op must stay a no-op
        logger().warning("%s", message)


_warned_keys: set[tuple[int, str]] = set()


def warn_once_per(key: str, message: str, stacklevel: int = 4) -> None:
    """One WispWarning per ``key`` per process (``warn_once`` is one per process)."""
    token = (os.getpid(), key)
    if token in _warned_keys:
        return
    _warned_keys.add(token)
    import warnings

    from wisp.errors import WispWarning

    try:
        warnings.warn(message, WispWarning, stacklevel=stacklevel)
    except WispWarning:
        logger().warning("%s", message)
