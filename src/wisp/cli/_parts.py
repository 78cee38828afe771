"""Parts of wisp a command loads when it runs, and how it calls them.

``function`` imports a part (the server, the dashboard, the uploader) and turns a missing
optional package into a :class:`~wisp.cli._term.CliError` with its install hint;
``call_with`` leaves out None arguments so the part's own defaults apply; ``cell`` formats
a table cell (times as local dates).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

from wisp.cli._term import EXIT, CliError
from wisp.errors import install_hint

__all__ = ["call_with", "cell", "function"]


def function(module: str, name: str, what: str, extra: str) -> Callable[..., Any]:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        if missing and not missing.startswith("wisp"):
            raise CliError(
                f"{what} needs the package {missing!r}",
                install_hint(extra),
                EXIT["missing_dependency"],
            ) from None
        raise CliError(
            f"{what} is not part of this wisp build ({module} is missing)",
            "upgrade wisp",
            EXIT["missing_dependency"],
        ) from None
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise CliError(
            f"{what} is not part of this wisp build ({module}.{name} is missing)",
            "upgrade wisp",
            EXIT["missing_dependency"],
        )
    return fn  # type: ignore[no-any-return]


def call_with(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``, leaving out None values so that its own defaults apply."""
    return fn(*args, **{k: v for k, v in kwargs.items() if v is not None})


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e9:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(value))
    return str(value)
