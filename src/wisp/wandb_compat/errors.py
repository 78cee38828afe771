"""``wandb.errors``: wandb's exception names on wisp's error tree (``wisp.errors``).

``except wandb.errors.CommError`` catches what wisp raises when a server cannot be
reached or refuses a call; ``Error`` is the base of every error wisp raises on purpose.
"""

from __future__ import annotations

from wisp.errors import (
    ApiError,
    FatalApiError,
    RunStateError,
    UsageError,
    WispError,
)

__all__ = [
    "AuthenticationError",
    "AuthorizationError",
    "CommError",
    "Error",
    "UnsupportedError",
    "UsageError",
    "WandbCoreNotAvailableError",
]

#: wandb's base exception.
Error = WispError
#: A server call that failed (connection, timeout, refusal).
CommError = ApiError
#: A server refused the API key (401) or what it may do (403): wisp's FatalApiError,
#: whose ``status`` says which.
AuthenticationError = FatalApiError
AuthorizationError = FatalApiError


class UnsupportedError(UsageError):
    """A wandb feature wisp does not provide."""


class WandbCoreNotAvailableError(RunStateError):
    """wandb's service binary is missing; wisp has none, so this is never raised."""
