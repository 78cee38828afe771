"""Values as strict JSON for agents: non-finite floats as strings, numpy scalars unwrapped."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["is_num", "jsonable"]


def jsonable(v: Any) -> Any:
    """``v`` with non-finite floats as strings and tuples as lists (strict JSON)."""
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    if v is None or isinstance(v, str | int | bool):
        return v
    if hasattr(v, "item"):  # a numpy scalar
        return jsonable(v.item())
    return str(v)


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)
