"""The one error tree of wisp.

Every exception wisp raises on purpose derives from :class:`WispError` and also
from the builtin that matches its meaning, so ``except TypeError`` in user code
keeps working when wisp is the one complaining.

    WispError
    ├── UsageError (TypeError)            misuse of the API: bad value, bad argument
    │   └── ValueLimitError (ValueError)  a value is too large to log
    ├── RunStateError (RuntimeError)      the run is finished / not started / forked
    ├── RunFileError (OSError)            the run file could not be written or read
    │   └── CorruptRunFileError           the run file is not a wisp run file
    ├── WriterError (RuntimeError)        the background writer failed (raised at finish)
    ├── ArtifactError (RuntimeError)      an artifact could not be logged, found or verified
    └── ApiError (OSError)                talking to a server failed
        ├── RetryableApiError             connection errors, timeouts, 429, 5xx
        └── FatalApiError (ValueError)    4xx that cannot succeed on retry
            └── NotFoundError (LookupError) no such run, project, metric or file
"""

from __future__ import annotations

__all__ = [
    "ApiError",
    "ArtifactError",
    "CorruptRunFileError",
    "FatalApiError",
    "NotFoundError",
    "RetryableApiError",
    "RunFileError",
    "RunStateError",
    "UsageError",
    "ValueLimitError",
    "WispError",
    "WispWarning",
    "WriterError",
    "install_hint",
]

# The name wisp is installed by (``pip install wisp-tracker``); the import name is ``wisp``.
# PyPI's ``wisp`` is someone else's package.  pyproject.toml's ``[project] name`` and every
# install hint (``install_hint``) use this one definition (tests/test_distribution.py).
DISTRIBUTION = "wisp-tracker"


def install_hint(*extras: str) -> str:
    """The command that installs wisp with ``extras``: ``pip install 'wisp-tracker[server]'``."""
    if not extras:
        return f"pip install {DISTRIBUTION}"
    return f"pip install '{DISTRIBUTION}[{','.join(extras)}]'"


class WispError(Exception):
    """Root of every error wisp raises on purpose."""


class UsageError(WispError, TypeError):
    """The API was called in a way it does not accept (wrong type, bad argument)."""


class ValueLimitError(UsageError, ValueError):
    """A single logged value is larger than the configured limit."""


class RunStateError(WispError, RuntimeError):
    """The operation does not fit the run's state (finished, never started, ...)."""


class RunFileError(WispError, OSError):
    """A run file or run directory could not be written or read."""


class CorruptRunFileError(RunFileError):
    """The file is not a wisp run file, or its header is damaged."""


class WriterError(WispError, RuntimeError):
    """The background writer failed; raised from ``finish()`` with the first cause."""


class ArtifactError(WispError, RuntimeError):
    """An artifact could not be logged (a file changed before upload), found or verified."""


class ApiError(WispError, OSError):
    """A request to a wisp server failed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RetryableApiError(ApiError):
    """A failure that may succeed when retried (network, timeout, 429, 5xx)."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class FatalApiError(ApiError, ValueError):
    """A failure that retrying cannot fix (bad request, auth refused, not found)."""


class WispWarning(UserWarning):
    """A warning wisp gives on the calling thread (e.g. a refused step)."""


class NotFoundError(FatalApiError, LookupError):
    """The run, project, metric key or file asked for does not exist (named in the message)."""
