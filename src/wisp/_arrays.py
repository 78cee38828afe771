"""Arrays and framework tensors given to ``log()`` or ``summary``: wandb's conversion rules.

wandb (``wandb/util.py``: ``json_friendly``, ``maybe_compress_history``,
``maybe_compress_summary``) turns a numpy array, torch tensor or JAX array into:

- one element: a number (wisp already did this);
- 2 to 32 elements (or none): ``array.tolist()``, nested for more than one dimension;
- more than 32 elements, in ``log()``: a histogram with 32 bins;
- more than 32 elements, in ``summary``: statistics ``{"_type", "var", "mean", "min",
  "max", "10%", "25%", "75%", "90%", "size"}``.

wisp does the same on the calling thread for CPU data; a device tensor is copied
asynchronously (``_tensors.snapshot``) and becomes its list or histogram on the writer
thread, so ``log()`` never waits for the device.
"""

from __future__ import annotations

import sys

from wisp._deferred import Deferred
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._deferred import ResolveContext
    from wisp._tensors import ArraySnapshot

__all__ = ["LIST_MAX_ELEMENTS", "convert_array", "convert_jax", "convert_torch", "summary_array"]

#: Arrays with at most this many elements log as lists; larger ones as histograms.
LIST_MAX_ELEMENTS = 32
#: Bins of the histogram a large array becomes (wandb: ``Histogram(obj, num_bins=32)``).
HISTOGRAM_BINS = 32


class _DeviceList(Deferred):
    """A small device array: its ``tolist()`` on the writer thread."""

    __slots__ = ("_snap",)

    def __init__(self, snap: ArraySnapshot) -> None:
        self._snap = snap

    def estimate_bytes(self) -> int:
        return 8 * LIST_MAX_ELEMENTS

    def resolve(self, ctx: ResolveContext) -> Any:
        return self._snap.array().tolist()


def _size(value: Any) -> int:
    size = 1
    for n in getattr(value, "shape", ()):
        size *= int(n)
    return size


def _kind(value: Any) -> str:
    """numpy dtype kind of ``value`` ('f', 'i', 'b', 'U', ...); '?' when unknown."""
    dt = getattr(value, "dtype", None)
    kind = getattr(dt, "kind", None)
    if kind is not None:
        return str(kind)
    name = str(dt).removeprefix("torch.")
    if name == "bool":
        return "b"
    if name.startswith("complex"):
        return "c"
    if name.startswith(("float", "bfloat", "half", "double")):
        return "f"
    if name.startswith(("int", "uint", "long", "short")):
        return "i"
    return "?"


def _is_cpu(value: Any) -> bool:
    device = getattr(value, "device", None)
    if device is None:  # numpy
        return True
    return getattr(device, "type", getattr(device, "platform", "cpu")) == "cpu"


def convert_array(key: str, value: Any, what: str) -> Any:
    """A multi-element (or empty) array given to ``log()``: a list or a Histogram.

    ``what`` names the array's kind in errors ("numpy array", "torch tensor", ...).
    """
    kind = _kind(value)
    size = _size(value)
    shape = tuple(int(n) for n in getattr(value, "shape", ()))
    if kind == "c":
        raise UsageError(f"log() value for {key!r} is a complex {what}; expected real numbers")
    if size <= LIST_MAX_ELEMENTS:
        if kind not in "biufUS":
            raise UsageError(
                f"log() value for {key!r} is a {what} of dtype {getattr(value, 'dtype', '?')}; "
                "expected numbers, bools or strings"
            )
        if type(value).__module__.partition(".")[0] == "numpy":
            return value.tolist()
        if _is_cpu(value) and hasattr(value, "tolist"):
            return value.detach().tolist() if hasattr(value, "detach") else value.tolist()
        from wisp._tensors import snapshot

        return _DeviceList(snapshot(value, f"log() value for {key!r}"))
    if kind not in "biuf":
        raise UsageError(
            f"log() value for {key!r} is a {what} of shape {shape} and dtype "
            f"{getattr(value, 'dtype', '?')}; more than {LIST_MAX_ELEMENTS} elements log as "
            "a histogram, which needs numbers"
        )
    from wisp.media import Histogram

    return Histogram(value, num_bins=HISTOGRAM_BINS).at_log(key)


def summary_array(value: Any) -> Any:
    """A value for ``summary``: arrays with more than 32 elements become wandb's statistics.

    Anything else is returned unchanged (``log()``'s rules convert it after).
    """
    t = type(value)
    root = (t.__module__ or "").partition(".")[0]
    if root not in ("numpy", "torch", "jax", "jaxlib") or _size(value) <= LIST_MAX_ELEMENTS:
        return value
    import numpy as np

    from wisp._tensors import snapshot

    if root == "numpy":
        a = np.asarray(value)
        typename = f"numpy.{t.__name__}"
    else:
        a = snapshot(value, "summary value").array()
        typename = "torch.Tensor" if root == "torch" else f"{root}.{t.__name__}"
    if a.dtype.kind not in "biuf":
        return value  # log()'s rules refuse it with a clear message
    a = a.astype(np.float64)
    return {
        "_type": typename,
        "var": float(np.var(a)),
        "mean": float(np.mean(a)),
        "min": float(np.amin(a)),
        "max": float(np.amax(a)),
        "10%": float(np.percentile(a, 10)),
        "25%": float(np.percentile(a, 25)),
        "75%": float(np.percentile(a, 75)),
        "90%": float(np.percentile(a, 90)),
        "size": int(a.size),
    }


# -- plain log() values --------------------------------------------------------------------------


class _DeviceScalar(Deferred):
    """A 1-element device tensor: resolved to a Python number on the writer thread."""

    __slots__ = ("_snap",)

    def __init__(self, snap: ArraySnapshot) -> None:
        self._snap = snap

    def resolve(self, ctx: ResolveContext) -> Any:
        return self._snap.array().reshape(()).item()


def convert_torch(key: str, value: Any) -> Any:
    """A torch value given to ``log()``: a number, or an error naming ``key``."""
    torch = sys.modules["torch"]
    if not isinstance(value, torch.Tensor):
        raise UsageError(
            f"log() value for {key!r} has type {type(value).__module__}.{type(value).__name__}, "
            "expected a number or a 1-element tensor"
        )
    if value.numel() != 1:  # wandb's rules: a list up to 32 elements, a histogram above
        return convert_array(key, value, "torch tensor")
    if value.dtype.is_complex:
        raise UsageError(f"log() value for {key!r} is a complex tensor, expected a real number")
    if value.device.type == "cpu":
        return value.item()  # a Python number: nothing left to mutate
    from wisp._tensors import snapshot

    return _DeviceScalar(snapshot(value, f"log() value for {key!r}"))


def convert_jax(key: str, value: Any) -> Any:
    """A JAX value given to ``log()``: 1-element arrays resolve on the writer thread."""
    if "Tracer" in type(value).__name__:
        raise UsageError(
            f"log() value for {key!r} is a traced JAX value; log outside jit/grad/vmap"
        )
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        raise UsageError(
            f"log() value for {key!r} has type {type(value).__module__}.{type(value).__name__}, "
            "expected a number or a 1-element array"
        )
    if _size(value) != 1:  # wandb's rules: a list up to 32 elements, a histogram above
        return convert_array(key, value, "JAX array")
    from wisp._tensors import snapshot

    return _DeviceScalar(snapshot(value, f"log() value for {key!r}"))
