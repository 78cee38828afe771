"""What the writer keeps of data that fails to encode: rows of a history batch without the
values at fault (:func:`isolate`), JSON records without the pieces at fault
(:func:`salvage`).  Each piece left out goes to ``reject(what, where, reason)``, the
writer's ``Writer.reject``, which counts it and leaves a WARNING record."""

from __future__ import annotations

import json

from wisp._protocol import clean_text, step_problem
from wisp._runfile import encode_history

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    Reject = Callable[[str, str, str], None]

__all__ = ["DROP", "describe", "dumps", "isolate", "salvage"]

DROP = object()  # what salvage() leaves out
# one JSON encoding for the run file's records: NaN allowed, compact, UTF-8 as is
dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode


def describe(exc: BaseException) -> str:
    """``exc`` in a WARNING record's ``reason``: its type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def isolate(rows: Sequence[Sequence[Any]], reject: Reject) -> list[Sequence[Any]]:
    """The rows of a batch that failed to encode, without what made it fail.

    Row by row, then value by value inside a failing row: every value that
    encodes is kept; a value (or a row whose step is invalid) that does not is
    rejected as ``"value"``.
    """
    good: list[Sequence[Any]] = []
    for row in rows:
        step, stamp, vals = row[-3:]
        if type(step) is not int or step_problem(step) is not None:
            why = step_problem(step) if type(step) is int else "not an int"
            reject("value", f"row at step {step!r}", f"invalid step: {why}")
            continue
        try:
            encode_history([row])
        except Exception:  # noqa: BLE001 - find the value(s) at fault
            values = {}
            for key, value in vals.items():
                try:
                    encode_history([[step, stamp, {key: value}]])
                except Exception as exc:  # noqa: BLE001
                    reject("value", f"{key!r} at step {step}", describe(exc))
                else:
                    values[key] = value
            if values:
                good.append([step, stamp, values])
        else:
            good.append(row)
    return good


def salvage(obj: Any, where: str, reject: Reject) -> Any:
    """``obj`` without what JSON cannot encode: strings sanitised (``clean_text``), other
    bad pieces rejected as ``"value"`` and left out (:data:`DROP` for ``obj`` itself)."""
    try:
        dumps(obj).encode("utf-8")
        return obj
    except (ValueError, TypeError, RecursionError) as exc:
        if type(obj) is str:
            return clean_text(obj)
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                key = clean_text(k) if type(k) is str else k
                v = salvage(v, f"{where}.{key}", reject)
                if v is not DROP:
                    out[key] = v
            return out
        if isinstance(obj, (list, tuple)):
            items = (salvage(v, f"{where}[{i}]", reject) for i, v in enumerate(obj))
            return [v for v in items if v is not DROP]
        reject("value", where, describe(exc))
        return DROP
