"""Helpers shared by the framework integrations."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["config_safe", "flatten_numbers", "state_for"]

_JSON_SCALARS = (str, int, float, bool, type(None))


def config_safe(value: Any, depth: int = 0) -> Any:
    """A JSON-like copy of a framework's hyperparameters; anything else becomes its repr.

    Frameworks hand over classes, callables, tensors and enums among their
    arguments; a config must never make training fail, so those are stored as text.
    """
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 20:
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): config_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [config_safe(v, depth + 1) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy / torch scalars
        try:
            return config_safe(value.item(), depth + 1)
        except (TypeError, ValueError, RuntimeError):
            return repr(value)
    if hasattr(value, "value") and type(value).__mro__[-2].__name__ == "Enum":
        return config_safe(value.value, depth + 1)
    if hasattr(value, "__dataclass_fields__"):
        return {f: config_safe(getattr(value, f), depth + 1) for f in value.__dataclass_fields__}
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return repr(value)


def flatten_numbers(logs: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """Metrics a framework reports, keeping numbers (and 0-d arrays/tensors as numbers)."""
    out: dict[str, Any] = {}
    for key, value in (logs or {}).items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            out[prefix + str(key)] = value
        elif hasattr(value, "item") and (
            getattr(value, "ndim", None) == 0 or getattr(value, "size", None) == 1
        ):
            try:
                item = value.item()
            except (TypeError, ValueError, RuntimeError):
                continue
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                out[prefix + str(key)] = item
    return out


def state_for(status: str) -> tuple[int, str]:
    """(exit code, run state) for a framework's end-of-training status word."""
    s = status.lower()
    if s in ("success", "finished", "completed", "ok"):
        return 0, "finished"
    if s in ("interrupted", "killed", "keyboardinterrupt"):
        return 130, "killed"
    return 1, "failed"
