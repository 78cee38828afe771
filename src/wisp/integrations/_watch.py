"""``wisp.watch(model)``: histograms of a torch model's gradients and parameters.

Every ``log_freq``-th training pass of a watched module is *armed*.  A pass starts at
the first forward call of the module *or any of its submodules* (so a Lightning
``training_step`` that calls ``self.net(x)`` counts, not only ``model(x)``) and ends
when the backward pass reaches the model's parameters; a model without trainable
parameters counts each outermost forward call as a pass.  An armed pass logs:

- ``parameters``: histograms of the parameters are logged (``commit=False``) into
  the row being built, as ``parameters/<name>``;
- ``gradients``: a post-accumulate-grad hook on each parameter takes a histogram
  of its ``.grad`` during the following backward pass, and a final autograd
  callback logs them all (``commit=False``) as ``gradients/<name>`` when the
  backward pass ends, before ``backward()`` returns.

Histograms are computed on the tensor's own device with kernels that need no
host synchronisation (no ``.item()``, no boolean indexing); the small result is
copied to the host asynchronously and read on the writer thread.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp.errors import RunStateError, UsageError

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext
    from wisp._run import Run

__all__ = ["DeviceHistogram", "unwatch", "watch"]

_MODES = ("gradients", "parameters", "all")
_watchers: list[_Watcher] = []


class DeviceHistogram(Deferred):
    """A histogram of a torch tensor, computed on its device without a host sync."""

    __slots__ = ("_bins", "_counts", "_event", "_stats")

    def __init__(self, tensor: Any, bins: int = 64) -> None:
        import torch

        t = tensor.detach().reshape(-1)
        if t.dtype not in (torch.float32, torch.float64):
            t = t.float()
        finite = torch.isfinite(t)
        lo = torch.where(finite, t, torch.full_like(t, float("inf"))).amin()
        hi = torch.where(finite, t, torch.full_like(t, float("-inf"))).amax()
        width = (hi - lo).clamp_min(torch.finfo(t.dtype).tiny)
        idx = ((t - lo) / width * bins).floor().clamp(0, bins - 1).long()
        # two extra slots count NaN and infinite values
        idx = torch.where(finite, idx, torch.where(torch.isnan(t), bins, bins + 1))
        counts = torch.zeros(bins + 2, dtype=torch.int64, device=t.device)
        counts.scatter_add_(0, idx, torch.ones_like(idx))
        stats = torch.stack([lo.double(), hi.double()])
        if t.device.type == "cuda":
            host_counts = torch.empty(counts.shape, dtype=counts.dtype, pin_memory=True)
            host_stats = torch.empty(stats.shape, dtype=stats.dtype, pin_memory=True)
            host_counts.copy_(counts, non_blocking=True)
            host_stats.copy_(stats, non_blocking=True)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record()
            self._event: Any = event
            counts, stats = host_counts, host_stats
        else:
            self._event = None
            counts, stats = counts.cpu(), stats.cpu()
        self._counts = counts
        self._stats = stats
        self._bins = bins

    def resolve(self, ctx: ResolveContext) -> Any:
        if self._event is not None:
            self._event.synchronize()
        counts = [int(c) for c in self._counts.tolist()]
        lo, hi = (float(v) for v in self._stats.tolist())
        inf = counts.pop()
        nan = counts.pop()
        if lo > hi:  # nothing finite
            lo = hi = 0.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        step = (hi - lo) / self._bins
        edges = [lo + i * step for i in range(self._bins)] + [hi]
        return histogram_value(counts, edges, nan, inf)


def histogram_value(counts: list[int], edges: list[float], nan: int = 0, inf: int = 0) -> Any:
    """The typed value of a histogram, as ``wisp.Histogram`` stores it (docs/run-file.md)."""
    return {"_type": "histogram", "bins": edges, "counts": counts, "nan": nan, "inf": inf}


class _Watcher:
    def __init__(self, run: Run, model: Any, log: str, log_freq: int, prefix: str) -> None:
        self.run = run
        self.model = model
        self.log = log
        self.log_freq = log_freq
        self.prefix = prefix
        self.calls = 0
        self.armed = False
        self.in_pass = False
        self.depth = 0
        self.queued = False
        self.pending: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.handles: list[Any] = []
        trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.ends_on_backward = bool(trainable)
        for module in model.modules():  # every submodule: the model may never be called itself
            self.handles.append(module.register_forward_pre_hook(self._on_forward))
            if not self.ends_on_backward:  # then a pass is an outermost forward call
                self.handles.append(module.register_forward_hook(self._after_forward))
        # every parameter's hook ends the pass: any of them may be unused in a given pass
        for name, param in trainable:
            hook = self._grad_hook(name) if log in ("gradients", "all") else self._end_pass
            self.handles.append(param.register_post_accumulate_grad_hook(hook))

    def _end_pass(self, param: Any = None) -> None:
        self.in_pass = False

    def _after_forward(self, module: Any, args: Any, output: Any) -> None:
        self.depth = max(self.depth - 1, 0)
        if self.depth == 0:
            self.in_pass = False

    def _on_forward(self, module: Any, args: Any) -> None:
        if not self.ends_on_backward:
            self.depth += 1
        if self.in_pass:
            return
        import torch

        if not (module.training and torch.is_grad_enabled()):
            return
        self.in_pass = True
        self.calls += 1
        self.armed = self.calls % self.log_freq == 0
        if self.armed and self.log in ("parameters", "all"):
            row = {
                f"parameters/{self.prefix}{name}": DeviceHistogram(p)
                for name, p in self.model.named_parameters()
            }
            if row:
                self.run.log(row, commit=False)

    def _grad_hook(self, name: str) -> Any:
        key = f"gradients/{self.prefix}{name}"

        def hook(param: Any) -> None:
            self.in_pass = False
            if not self.armed or param.grad is None:
                return
            hist = DeviceHistogram(param.grad)
            with self.lock:
                self.pending[key] = hist
                first = not self.queued
                self.queued = True
            if first:
                import torch

                torch.autograd.Variable._execution_engine.queue_callback(self._flush)

        return hook

    def _flush(self) -> None:
        with self.lock:
            row, self.pending = self.pending, {}
            self.queued = False
        self.armed = False
        if row and self.run.live:
            self.run.log(row, commit=False)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()


def watch(
    models: Any,
    criterion: Any = None,
    log: str | None = "gradients",
    log_freq: int = 100,
    idx: int | None = None,
    log_graph: bool = False,
    *,
    run: Run | None = None,
) -> None:
    """Log histograms of gradients and/or parameters of torch modules every ``log_freq``
    training steps (``log`` is ``"gradients"``, ``"parameters"`` or ``"all"``).

    ``criterion``, ``idx`` and ``log_graph`` are accepted for wandb compatibility and
    ignored.  Remove the hooks with :func:`unwatch`.  ``run`` (default: the current
    run) is where they are logged (``run.watch(...)``).
    """
    from wisp import _current

    run = run or _current.run
    if run is None:
        raise RunStateError("wisp.watch() needs a run: call wisp.init() first")
    if log is None:
        return
    if log not in _MODES:
        raise UsageError(f"watch() log must be one of {', '.join(_MODES)} or None, got {log!r}")
    if isinstance(log_freq, bool) or not isinstance(log_freq, int) or log_freq < 1:
        raise UsageError(f"watch() log_freq must be an int >= 1, got {log_freq!r}")
    model_list = list(models) if isinstance(models, (list, tuple)) else [models]
    for model in model_list:
        if not (hasattr(model, "named_parameters") and hasattr(model, "register_forward_pre_hook")):
            raise UsageError(f"watch() takes torch.nn.Module objects, got {type(model).__name__}")
    if run.mode == "disabled":
        return
    many = len(model_list) > 1
    for i, model in enumerate(model_list):
        unwatch(model)
        prefix = f"{i}." if many else ""
        _watchers.append(_Watcher(run, model, log, log_freq, prefix))


def unwatch(models: Any = None) -> None:
    """Remove the hooks :func:`watch` added (from every watched module when ``models`` is None)."""
    if models is None:
        targets = None
    else:
        targets = list(models) if isinstance(models, (list, tuple)) else [models]
    keep = []
    for w in _watchers:
        if targets is None or any(w.model is m for m in targets):
            w.remove()
        else:
            keep.append(w)
    _watchers[:] = keep
