"""What ``log()`` accepts, and how values become JSON for the run file.

The calling thread only *checks* values (cheaply) and copies what could change
under it; anything expensive is wrapped in a :class:`Deferred` whose
``resolve()`` runs on the writer thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from wisp._deferred import Deferred
from wisp._protocol import (
    DEFAULT_MAX_VALUE_BYTES,
    MAX_INT,
    MAX_KEY_LENGTH,
    MAX_LIST_ITEMS,
    MAX_STRING_LENGTH,
    clean_text,
    key_problem,
)
from wisp.errors import UsageError, ValueLimitError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._deferred import ResolveContext  # noqa: F401 - re-exported for type checkers


__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "MAX_KEY_LENGTH",
    "RESERVED_KEYS",
    "SCALAR_TYPES",
    "Deferred",
    "convert_value",
    "prepare_row",
]

SCALAR_TYPES = frozenset({float, int, str, bool, type(None)})
RESERVED_KEYS = frozenset({"_step", "_timestamp", "_runtime"})


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
    problem = key_problem(full if key else "")
    if problem is not None:  # the server refuses these keys (422), so refuse them at log()
        raise UsageError(f"log() key {full!r} {problem}")
    if full in RESERVED_KEYS:
        raise UsageError(f"log() key {full!r} is reserved; pass step= to set the step")
    return full


def _numpy_value(key: str, value: Any) -> Any:
    """A numpy scalar or array becomes a Python number (copied, so later changes don't leak)."""
    shape = getattr(value, "shape", ())
    size = getattr(value, "size", 1)
    if size != 1:  # wandb's rules: a list up to 32 elements, a histogram above
        from wisp._arrays import convert_array

        return convert_array(key, value, "numpy array")
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


_SMALL = frozenset({float, int, bool, type(None)})


def _plain(key: str, value: Any) -> Any:
    """The protocol's rules for a plain value: strings sanitised (clean_text) and at most
    MAX_STRING_LENGTH characters, integers within +-MAX_INT; lists item by item."""
    t = type(value)
    if t is str:
        if len(value) > MAX_STRING_LENGTH:
            raise ValueLimitError(
                f"log() value for {key!r} is a string of {len(value):,} characters, over the "
                f"limit of {MAX_STRING_LENGTH:,} (save it as a file or log a wisp.Table)"
            )
        return clean_text(value)
    if t is int and not -MAX_INT < value < MAX_INT:
        raise UsageError(
            f"log() value for {key!r} is an integer of {value.bit_length()} bits, outside "
            "+-2**64; log it as a float"
        )
    if t is list:
        return [_plain(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return value


def convert_value(key: str, value: Any) -> Any:
    """Check one value off the fast path; return what should be enqueued."""
    t = type(value)
    if t in SCALAR_TYPES:
        return value
    if isinstance(value, Deferred):
        return value.at_log(key)
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
    root = module.partition(".")[0]
    if root == "torch":
        from wisp._arrays import convert_torch

        return convert_torch(key, value)
    if root in ("jax", "jaxlib"):
        from wisp._arrays import convert_jax

        return convert_jax(key, value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Deferred) for v in value):
        from wisp.media._image import gallery

        return gallery(key, value)
    if isinstance(value, (list, tuple)) and all(type(v) in SCALAR_TYPES for v in value):
        if len(value) > MAX_LIST_ITEMS:
            raise UsageError(
                f"log() value for {key!r} is a list of {len(value)} items; at most "
                f"{MAX_LIST_ITEMS} plain "
                "values log as a list (use wisp.Histogram or wisp.Table for more)"
            )
        return list(value)
    raise UsageError(
        f"log() value for {key!r} has type {_type_name(value)}, expected a number, bool, str, "
        "None, a numpy/torch scalar, or a wisp media type (Audio, Histogram, Html, Image, "
        "Object3D, Table, Video, wisp.plot chart)"
    )


def value_bytes(value: Any) -> int:
    """About how many bytes ``value`` will take in the run (or its largest media file)."""
    t = type(value)
    if t is str:
        n = len(value)
        return n if n < 1 << 20 else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, Deferred):
        return value.estimate_bytes()
    if t is list:
        return sum(len(v) + 3 if type(v) is str else 8 for v in value)
    return 8


def check_size(key: str, value: Any, limit: int) -> None:
    """Refuse a value larger than ``limit`` bytes, naming the key."""
    n = value_bytes(value)
    if n > limit:
        raise ValueLimitError(
            f"log() value for {key!r} would store about {n:,} bytes, over the limit of "
            f"{limit:,} bytes per value (raise it with the max_value_bytes setting or "
            "WISP_MAX_VALUE_BYTES, or log something smaller)"
        )


def prepare_row(
    data: Mapping[str, Any], max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES
) -> tuple[dict[str, Any], bool]:
    """The slow path of ``log()``: flatten, check and convert every value.

    Returns the new row and whether it holds a :class:`Deferred`.  Raises
    UsageError, naming the key, before anything is enqueued; a value larger
    than ``max_value_bytes`` raises :class:`~wisp.errors.ValueLimitError`.
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
            value = _plain(full, convert_value(full, value))
            if type(value) not in _SMALL:
                check_size(full, value, max_value_bytes)
            if full in out:
                raise UsageError(f"log() key {full!r} appears twice after flattening nested dicts")
            if isinstance(value, Deferred):
                deferred = True
            out[full] = value

    walk(data, "")
    return out, deferred
