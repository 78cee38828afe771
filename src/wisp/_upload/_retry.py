"""How long to wait before retrying a request the server could not take (one rule for the
uploader and ``wisp.Api``'s HTTP client)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["retry_delay"]


def retry_delay(
    failures: int,
    retry_after: float | None,
    backoff: tuple[float, float],
    rand: Callable[[], float],
) -> float:
    """Seconds before attempt ``failures + 1``: exponential from ``backoff[0]`` up to
    ``backoff[1]``, jittered down to half by ``rand()`` (in [0, 1)); a server's
    ``Retry-After`` is honoured up to 60 s."""
    base, cap = backoff
    delay: float = min(cap, base * 2.0 ** min(failures - 1, 30)) * (0.5 + 0.5 * rand())
    if retry_after is not None:
        delay = max(delay, min(retry_after, 60.0))
    return delay
