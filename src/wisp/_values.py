"""What ``log()`` accepts, and how values become JSON for the run file.

The calling thread only *checks* values (cheaply) and copies what could change
under it; anything expensive is wrapped in a :class:`Deferred` whose
``resolve()`` runs on the writer thread.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from wisp.errors import UsageError

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


__all__ = ["RESERVED_KEYS", "SCALAR_TYPES", "Deferred", "prepare_row"]

SCALAR_TYPES = frozenset({float, int, str, bool, type(None)})
RESERVED_KEYS = frozenset({"_step", "_timestamp", "_runtime"})
MAX_KEY_LENGTH = 256


class Deferred:
    """A value whose conversion to JSON is done on the writer thread.

    Subclasses snapshot what they need in ``__init__`` (on the calling thread,
    cheaply) and do the expensive part in :meth:`resolve`.
    """

    __slots__ = ()

    def resolve(self, ctx: ResolveContext) -> Any:
        raise NotImplementedError


def _type_name(value: object) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__


def _check_key(key: object, prefix: str) -> str:
    if type(key) is not str:
        raise UsageError(
            f"log() keys must be strings, got {type(key).__name__} {key!r}"
            + (f" under {prefix!r}" if prefix else "")
        )
    full = prefix + key
    if not key or len(full) > MAX_KEY_LENGTH:
        raise UsageError(f"log() key {full!r} must be 1 to {MAX_KEY_LENGTH} characters long")
    if full in RESERVED_KEYS:
        raise UsageError(f"log() key {full!r} is reserved; pass step= to set the step")
    return full


def _numpy_value(key: str, value: Any) -> Any:
    """A numpy scalar or array becomes a Python number (copied, so later changes don't leak)."""
    shape = getattr(value, "shape", ())
    size = getattr(value, "size", 1)
    if size != 1:
        raise UsageError(
            f"log() value for {key!r} is a numpy array of shape {tuple(shape)}; only scalars and "
            "1-element arrays log as numbers (use wisp.Histogram or wisp.Image for arrays)"
        )
    kind = value.dtype.kind
    if kind not in "biufc":
        if kind in "US":
            return str(value.reshape(()).item() if shape else value.item())
        raise UsageError(
            f"log() value for {key!r} has numpy dtype {value.dtype}, expected a number or string"
        )
    item = value.reshape(()).item() if shape else value.item()
    if kind == "c":
        raise UsageError(f"log() value for {key!r} is complex ({item!r}), expected a real number")
    return item


_CONVERTERS: list[tuple[str, Any]] = []


def register_converter(module_prefix: str, convert: Any) -> None:
    """Let an extension accept values whose type lives in ``module_prefix``.

    ``convert(key, value)`` returns a JSON-able value or a :class:`Deferred`, or
    raises UsageError.  Types are matched by module name, so the framework is
    never imported by wisp itself.
    """
    _CONVERTERS.append((module_prefix, convert))


def convert_value(key: str, value: Any) -> Any:
    """Check one value off the fast path; return what should be enqueued."""
    t = type(value)
    if t in SCALAR_TYPES or isinstance(value, Deferred):
        return value
    if isinstance(value, (int, float, str)):  # subclasses (IntEnum, ...) become plain values
        if isinstance(value, bool):
            return bool(value)
        return (
            int(value)
            if isinstance(value, int)
            else (float(value) if isinstance(value, float) else str(value))
        )
    module = t.__module__ or ""
    if module == "numpy" or module.startswith("numpy."):
        return _numpy_value(key, value)
    for prefix, convert in _CONVERTERS:
        if module == prefix or module.startswith(prefix + "."):
            return convert(key, value)
    if isinstance(value, (list, tuple)) and all(type(v) in SCALAR_TYPES for v in value):
        if len(value) > 1024:
            raise UsageError(
                f"log() value for {key!r} is a list of {len(value)} items; at most 1024 plain "
                "values log as a list (use wisp.Histogram or wisp.Table for more)"
            )
        return list(value)
    raise UsageError(
        f"log() value for {key!r} has type {_type_name(value)}, expected a number, bool, str, "
        "None, a numpy/torch scalar, or a wisp media type (Histogram, Image, Table)"
    )


def prepare_row(data: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The slow path of ``log()``: flatten, check and convert every value.

    Returns the new row and whether it holds a :class:`Deferred`.  Raises
    UsageError, naming the key, before anything is enqueued.
    """
    if not isinstance(data, Mapping):
        raise UsageError(f"log() takes a dict of values, got {type(data).__name__}")
    out: dict[str, Any] = {}
    deferred = False

    def walk(mapping: Mapping[Any, Any], prefix: str) -> None:
        nonlocal deferred
        for key, value in mapping.items():
            full = _check_key(key, prefix)
            if isinstance(value, Mapping):
                if not value:
                    continue
                walk(value, full + "/")
                continue
            value = convert_value(full, value)
            if full in out:
                raise UsageError(f"log() key {full!r} appears twice after flattening nested dicts")
            if isinstance(value, Deferred):
                deferred = True
            out[full] = value

    walk(data, "")
    return out, deferred


def is_finite_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)
