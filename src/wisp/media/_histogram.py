"""``wisp.Histogram``: a distribution stored compactly in the history row.

Stored value (docs/run-file.md, "Typed values")::

    {"_type": "histogram", "bins": [edge0, ..., edgeN], "counts": [c1, ..., cN],
     "nan": n, "inf": n}

``bins`` holds the N + 1 bin edges; NaN and infinite values are left out of
the bins and counted separately.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from wisp import _tensors
from wisp._deferred import Deferred
from wisp.errors import UsageError

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = ["MAX_BINS", "Histogram"]

MAX_BINS = 512


def _numbers(what: str, seq: Any) -> list[Any]:
    if hasattr(seq, "tolist"):  # numpy arrays, CPU tensors
        seq = seq.tolist()
    if not isinstance(seq, (list, tuple)):
        raise UsageError(f"{what} must be a list or array of numbers, got {type(seq).__name__}")
    out = []
    for i, v in enumerate(seq):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise UsageError(f"{what}[{i}] is {v!r}; expected a number")
        out.append(v)
    return out


class Histogram(Deferred):
    """A histogram of ``sequence`` (or ``values=``), or ``np_histogram=(counts, edges)``.

    ``values`` may be a list of numbers, a numpy array, a torch tensor (any
    device; CUDA tensors are binned on the device, asynchronously) or a JAX
    array of any shape.  The data is copied when the Histogram is made; the
    binning happens on the writer thread.  NaN and infinite values are counted,
    not binned.  ``num_bins`` is 1 to 512.
    """

    __slots__ = ("_counts", "_device", "_edges", "_snap", "_value", "num_bins")

    def __init__(
        self,
        sequence: Any = None,
        np_histogram: tuple[Any, Any] | None = None,
        num_bins: int = 64,
        *,
        values: Any = None,
    ) -> None:
        if values is None:  # wandb's name for the data is ``sequence``
            values = sequence
        elif sequence is not None:
            raise UsageError("wisp.Histogram() takes sequence or values=, not both")
        self._value: dict[str, Any] | None = None
        if type(num_bins) is not int or not 1 <= num_bins <= MAX_BINS:
            raise UsageError(
                f"wisp.Histogram(num_bins=...) must be an int from 1 to {MAX_BINS}, "
                f"got {num_bins!r}"
            )
        self.num_bins = num_bins
        self._snap: Any = None
        self._device: Any = None
        self._counts: list[Any] | None = None
        self._edges: list[Any] | None = None
        if (values is None) == (np_histogram is None):
            raise UsageError("wisp.Histogram() takes exactly one of sequence or np_histogram=")
        if np_histogram is not None:
            self._from_counts(np_histogram)
            return
        if _tensors.is_cuda_tensor(values) and values.numel() > 0:
            self._device = _tensors.device_histogram(values, num_bins)
        else:
            self._snap = _tensors.snapshot(values, "wisp.Histogram(values)")

    def _from_counts(self, np_histogram: Any) -> None:
        if not isinstance(np_histogram, (tuple, list)) or len(np_histogram) != 2:
            raise UsageError(
                "wisp.Histogram(np_histogram=...) must be a (counts, edges) pair as returned "
                f"by numpy.histogram, got {type(np_histogram).__name__}"
            )
        counts = _numbers("wisp.Histogram(np_histogram) counts", np_histogram[0])
        edges = _numbers("wisp.Histogram(np_histogram) edges", np_histogram[1])
        if not 1 <= len(counts) <= MAX_BINS:
            raise UsageError(
                f"wisp.Histogram(np_histogram) has {len(counts)} bins; expected 1 to {MAX_BINS}"
            )
        if len(edges) != len(counts) + 1:
            raise UsageError(
                f"wisp.Histogram(np_histogram) has {len(counts)} counts and {len(edges)} edges; "
                "expected one more edge than counts"
            )
        if any(not math.isfinite(e) for e in edges) or any(
            b < a for a, b in itertools.pairwise(edges)
        ):
            raise UsageError("wisp.Histogram(np_histogram) edges must be finite and increasing")
        self._counts = counts
        self._edges = edges
        self.num_bins = len(counts)

    def estimate_bytes(self) -> int:
        return 40 * (self.num_bins + 2)

    def resolve(self, ctx: ResolveContext | None) -> Any:
        if self._value is None:  # computed once (the writer, or .histogram/.bins)
            if self._counts is not None:
                self._value = _value(self._edges, self._counts, 0, 0)
            elif self._device is not None:
                self._value = self._from_device(self._device.array())
            else:
                self._value = self._from_host(self._snap.array())
        return self._value

    @property
    def histogram(self) -> list[Any]:
        """The count in each bin (wandb's ``Histogram.histogram``); bins on first use."""
        counts: list[Any] = self.resolve(None)["counts"]
        return counts

    @property
    def bins(self) -> list[float]:
        """The bin edges, one more than the counts (wandb's ``Histogram.bins``)."""
        edges: list[float] = self.resolve(None)["bins"]
        return edges

    def _from_device(self, packed: Any) -> dict[str, Any]:
        import numpy as np

        n = self.num_bins
        lo, span, nan, inf = (float(v) for v in packed[n:])
        counts = packed[:n].astype(np.int64)
        if not counts.any():
            lo, span = 0.0, 1.0
        edges = np.linspace(lo, lo + span, n + 1)
        return _value(edges.tolist(), counts.tolist(), int(nan), int(inf))

    def _from_host(self, a: Any) -> dict[str, Any]:
        import numpy as np

        a = np.asarray(a).reshape(-1)
        if a.dtype.kind == "O":
            raise UsageError("wisp.Histogram(values) holds non-numbers")
        if a.dtype.kind == "b":
            a = a.astype(np.uint8)
        elif a.dtype == np.float16:  # float16 edges would be too coarse
            a = a.astype(np.float32)
        nan = inf = 0
        if a.dtype.kind == "f":
            finite = np.isfinite(a)
            if not finite.all():
                nan = int(np.isnan(a).sum())
                inf = int(a.size - nan - np.count_nonzero(finite))
                a = a[finite]
        counts, edges = np.histogram(a, bins=self.num_bins)
        return _value(edges.tolist(), counts.tolist(), nan, inf)

    def __repr__(self) -> str:
        return f"<wisp.Histogram num_bins={self.num_bins}>"


def _value(edges: Any, counts: Any, nan: int, inf: int) -> dict[str, Any]:
    return {"_type": "histogram", "bins": edges, "counts": counts, "nan": nan, "inf": inf}
