"""Framework arrays (numpy, torch, JAX) without stalling the calling thread.

wisp never imports a framework to *detect* its values: ``_values.convert_value``
looks at the type's module name and only then imports this module (through
``_arrays``, which holds the conversion rules of ``log()`` values), which in turn
uses the framework the caller has already imported.

Snapshots.  Whatever ``log()`` (or a media type's constructor) keeps of an array
is a private copy taken before it returns, so an in-place change afterwards
cannot leak into the logged value:

- numpy arrays and CPU tensors are copied (a memcpy; the only O(n) work on the
  calling thread);
- CUDA tensors are copied with ``non_blocking=True`` into pinned host memory
  and a CUDA event is recorded on the tensor's current stream.  Nothing waits
  on the calling thread; the writer thread waits for the event and then reads
  the host copy.  Later kernels on the same stream are ordered after the copy,
  so in-place changes made there cannot reach it;
- tensors on other devices (mps, xla, ...) are cloned on their device
  (asynchronous there) and moved to the host on the writer thread;
- JAX arrays are immutable: a reference is the snapshot, and the writer
  thread does the blocking transfer;
- lists and tuples are shallow-copied and turned into arrays on the writer.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

from wisp.errors import UsageError

if TYPE_CHECKING:
    pass

__all__ = [
    "ArraySnapshot",
    "device_histogram",
    "is_cuda_tensor",
    "snapshot",
]

_NUMERIC_KINDS = "biuf"


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in value.shape)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - numpy comes with every framework here
        raise ImportError(
            "logging arrays needs numpy; install it with `pip install numpy`"
        ) from exc
    return numpy


# -- snapshots -----------------------------------------------------------------------------------


def is_cuda_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor) and value.device.type == "cuda"


class ArraySnapshot:
    """A private copy of an array's data, possibly still in flight from a device.

    ``shape``, ``dtype`` (for display) and ``nbytes`` are known at once;
    :meth:`array` (writer thread) waits for the copy and returns a numpy array.
    """

    __slots__ = ("_data", "_event", "_kind", "_source", "dtype", "nbytes", "shape")

    def __init__(
        self,
        kind: str,
        data: Any,
        shape: tuple[int, ...],
        dtype: str,
        itemsize: int,
        event: Any = None,
        source: Any = None,
    ) -> None:
        self._kind = kind
        self._data = data
        self._event = event
        self._source = source  # keeps a device tensor alive until its copy is done
        self.shape = shape
        self.dtype = dtype
        size = 1
        for n in shape:
            size *= n
        self.nbytes = size * itemsize

    @property
    def ready(self) -> bool:
        """True when :meth:`array` will not wait for a device."""
        return self._event is None or bool(self._event.query())

    def array(self) -> Any:
        """The data as a numpy array (writer thread; may wait for the device copy)."""
        np = _numpy()
        kind, data = self._kind, self._data
        if self._event is not None:
            self._event.synchronize()
            self._event = None
            self._source = None
        if kind == "numpy":
            return data
        if kind == "torch":
            torch = sys.modules["torch"]
            if data.device.type != "cpu":
                data = data.cpu()
            if data.dtype in (torch.bfloat16, torch.float16):
                data = data.float()
            return data.resolve_conj().resolve_neg().numpy()
        if kind == "jax":
            return np.asarray(data)
        # a list or tuple
        return np.asarray(data, dtype=np.float64 if data else None)


def snapshot(value: Any, what: str) -> ArraySnapshot:
    """Copy ``value`` (numpy, torch, JAX, or a list of numbers) so later changes can't leak.

    ``what`` names the value in errors ("wisp.Image(data)").  Only numeric and
    bool data is accepted.
    """
    module = type(value).__module__ or ""
    root = module.partition(".")[0]
    if root == "numpy":
        np = sys.modules["numpy"]
        if not isinstance(value, (np.ndarray, np.generic)):
            raise UsageError(f"{what} has unsupported numpy type {type(value).__name__}")
        kind = value.dtype.kind
        if kind not in _NUMERIC_KINDS:
            raise UsageError(
                f"{what} has numpy dtype {value.dtype}; expected bool, integer or float data"
            )
        copy = np.array(value, copy=True)
        return ArraySnapshot("numpy", copy, copy.shape, copy.dtype.str, copy.dtype.itemsize)
    if root == "torch":
        return _snapshot_torch(value, what)
    if root in ("jax", "jaxlib"):
        if "Tracer" in type(value).__name__:
            raise UsageError(f"{what} is a traced JAX value; log outside jit/grad/vmap")
        dtype = str(value.dtype)
        if dtype.startswith("complex") or not hasattr(value, "shape"):
            raise UsageError(f"{what} has JAX dtype {dtype}; expected bool, integer or float")
        return ArraySnapshot("jax", value, _shape(value), dtype, value.dtype.itemsize)
    if isinstance(value, (list, tuple)):
        items = list(value)
        for i, v in enumerate(items[:1] + items[-1:]):  # cheap spot check; full check on writer
            if type(v) not in (int, float, bool):
                raise UsageError(
                    f"{what} is a list whose item {i if i == 0 else len(items) - 1} is "
                    f"{type(v).__name__}; expected numbers"
                )
        return ArraySnapshot("list", items, (len(items),), "float64", 8)
    raise UsageError(
        f"{what} has type {module + '.' if module and module != 'builtins' else ''}"
        f"{type(value).__name__}; expected a numpy array, a torch tensor, a JAX array or a "
        "list of numbers"
    )


def _snapshot_torch(value: Any, what: str) -> ArraySnapshot:
    torch = sys.modules["torch"]
    if not isinstance(value, torch.Tensor):
        raise UsageError(f"{what} has unsupported torch type {type(value).__name__}")
    dtype = value.dtype
    if dtype.is_complex or not (dtype.is_floating_point or dtype in _torch_exact(torch)):
        raise UsageError(f"{what} has torch dtype {dtype}; expected bool, integer or float data")
    if value.layout != torch.strided:
        raise UsageError(f"{what} is a {value.layout} tensor; convert it with .to_dense() first")
    t = value.detach() if value.requires_grad else value
    device = t.device.type
    if device == "cpu":
        # numpy's copy: single-threaded, so it never waits on a busy intra-op thread pool
        np = _numpy()
        if dtype == torch.bfloat16:
            t = t.to(torch.float32)
        try:
            view = t.numpy()
        except RuntimeError:  # a lazy negation/conjugation view: materialise it
            view = t.resolve_neg().resolve_conj().numpy()
        copy = np.array(view, copy=True)
        return ArraySnapshot("numpy", copy, copy.shape, str(dtype), copy.itemsize)
    shape = _shape(t)
    if device == "meta":
        raise UsageError(f"{what} is a tensor on the meta device: it holds no data")
    if device == "cuda":
        t = t.detach()
        host = torch.empty(shape, dtype=dtype, pin_memory=True)
        host.copy_(t, non_blocking=True)
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(t.device))
        return ArraySnapshot("torch", host, shape, str(dtype), t.element_size(), event, t)
    # mps, xla, ...: an asynchronous copy on the device, moved to the host by the writer
    return ArraySnapshot("torch", t.detach().clone(), shape, str(dtype), t.element_size())


@functools.lru_cache(maxsize=1)
def _torch_exact(torch: Any) -> frozenset[Any]:
    """Non-float torch dtypes that hold numbers (bool and integers)."""
    names = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
    return frozenset(getattr(torch, n) for n in names if hasattr(torch, n))


def device_histogram(value: Any, num_bins: int) -> ArraySnapshot:
    """Histogram a CUDA tensor on its device, without synchronising.

    Returns a snapshot (pinned host memory, still being filled) of float64:
    ``num_bins`` counts, then the first edge, the range width, the NaN count
    and the inf count.  Bins follow ``numpy.histogram``: equal widths over the
    finite values' range, the last bin closed; a range of width 0 becomes
    ``[v - 0.5, v + 0.5]``.
    """
    torch = sys.modules["torch"]
    x = value.detach().reshape(-1)
    if not x.dtype.is_floating_point:
        x = x.to(torch.float64 if x.dtype == torch.int64 else torch.float32)
    finite = torch.isfinite(x)
    nan = torch.isnan(x).sum()
    inf = x.numel() - finite.sum() - nan
    big = torch.finfo(x.dtype).max
    lo = torch.where(finite, x, big).amin().double()
    hi = torch.where(finite, x, -big).amax().double()
    width = hi - lo
    flat = width <= 0
    lo = torch.where(flat, lo - 0.5, lo)
    span = torch.where(flat, torch.ones_like(width), width)
    idx = ((x.double() - lo) / span * num_bins).floor().clamp(0, num_bins - 1)
    idx = torch.where(finite, idx, torch.zeros_like(idx)).to(torch.int64)
    counts = torch.zeros(num_bins, dtype=torch.float64, device=x.device)
    counts.scatter_add_(0, idx, finite.to(torch.float64))
    packed = torch.cat([counts, torch.stack([lo, span, nan.double(), inf.double()])])
    return _snapshot_torch(packed, "wisp.Histogram(values)")
