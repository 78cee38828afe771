"""Import TensorBoard event files as wisp runs.

Each folder under ``logdir`` that holds event files is one TensorBoard run and
becomes one wisp run (named by its path relative to ``logdir``; the project is
the logdir's name unless given).  Read with the tensorboard package's own
``EventAccumulator``: scalars become history values, histograms become wisp
histograms (bucket edges and counts), images are stored in the run's
``media/`` folder as wisp image values; both the TF1-style summaries (as
``torch.utils.tensorboard`` writes them) and TF2 tensor summaries are read.
Values of one step share one row, stamped with the earliest wall time seen for
that step.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable
from typing import Any

from wisp.errors import RunFileError
from wisp.integrations.importers._writeback import (
    ImportedRun,
    MediaBytes,
    Typed,
    existing_run_dir,
)

__all__ = ["import_tensorboard"]

log = logging.getLogger("wisp")

_SUFFIX = {b"\x89PNG": ".png", b"\xff\xd8\xff": ".jpg", b"GIF8": ".gif"}


def _modules() -> tuple[Any, Any, Any]:
    try:
        from tensorboard.backend.event_processing import (  # type: ignore[import-untyped]
            event_accumulator,
            io_wrapper,
        )
        from tensorboard.util import tensor_util  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ImportError(
            "importing TensorBoard runs needs the tensorboard package to read event files; "
            "install it with `pip install tensorboard`"
        ) from exc
    return event_accumulator, io_wrapper, tensor_util


def _suffix(data: bytes) -> str:
    for magic, suffix in _SUFFIX.items():
        if data.startswith(magic):
            return suffix
    return ".png"


def _histogram(bucket_limit: list[float], counts: list[float], lo: float, hi: float) -> Typed:
    """TensorBoard buckets (right edges + counts) as a wisp histogram.

    TensorBoard's default buckets are exponential and mostly empty: runs of
    empty buckets are merged, degenerate ones folded into their neighbour, and
    at most 512 bins kept (neighbours merged pairwise past that).
    """
    edges = [lo]
    kept: list[int] = []
    for limit, count in zip(bucket_limit, counts, strict=False):
        right = min(limit, hi)
        c = int(count)
        if right <= edges[-1]:  # at or below the previous edge: fold into the last bin
            if kept:
                kept[-1] += c
            elif c:
                edges.append(edges[-1] + max(abs(edges[-1]) * 1e-9, 1e-12))
                kept.append(c)
            continue
        if c == 0 and kept and kept[-1] == 0:
            edges[-1] = right  # widen the run of empty bins
            continue
        edges.append(right)
        kept.append(c)
    while kept and kept[-1] == 0:  # empty bins past the data
        kept.pop()
        edges.pop()
    if not kept:
        edges, kept = [lo, lo + 1.0], [0]
    while len(kept) > 512:
        kept = [sum(kept[i : i + 2]) for i in range(0, len(kept), 2)]
        edges = edges[::2] if len(edges) % 2 else [*edges[::2], edges[-1]]
    return Typed({"_type": "histogram", "bins": edges, "counts": kept, "nan": 0, "inf": 0})


class _Rows:
    def __init__(self) -> None:
        self.rows: dict[int, tuple[float, dict[str, Any]]] = {}

    def put(self, step: int, wall_time: float, key: str, value: Any) -> None:
        ts, row = self.rows.get(step, (wall_time, {}))
        row[key] = value
        self.rows[step] = (min(ts, wall_time), row)


def _read_run(path: str, ea_mod: Any, tensor_util: Any) -> tuple[_Rows, float, float]:
    acc = ea_mod.EventAccumulator(
        path,
        size_guidance={
            k: 0
            for k in ("scalars", "histograms", "images", "tensors", "compressedHistograms", "audio")
        },
    )
    acc.Reload()
    tags = acc.Tags()
    rows = _Rows()
    times: list[float] = []
    for tag in tags.get("scalars", []):
        for ev in acc.Scalars(tag):
            rows.put(ev.step, ev.wall_time, tag, float(ev.value))
            times.append(ev.wall_time)
    for tag in tags.get("histograms", []):
        for ev in acc.Histograms(tag):
            h = ev.histogram_value
            rows.put(
                ev.step,
                ev.wall_time,
                tag,
                _histogram(list(h.bucket_limit), list(h.bucket), h.min, h.max),
            )
            times.append(ev.wall_time)
    for tag in tags.get("images", []):
        for ev in acc.Images(tag):
            data = bytes(ev.encoded_image_string)
            rows.put(
                ev.step,
                ev.wall_time,
                tag,
                MediaBytes(data, _suffix(data), int(ev.width), int(ev.height)),
            )
            times.append(ev.wall_time)
    for tag in tags.get("tensors", []):  # TF2-style summaries
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        for ev in acc.Tensors(tag):
            arr = tensor_util.make_ndarray(ev.tensor_proto)
            value: Any = None
            if plugin == "scalars" and arr.size == 1:
                value = float(arr.reshape(()).item())
            elif plugin == "histograms" and arr.ndim == 2 and arr.shape[1] == 3 and len(arr):
                value = _histogram(
                    [float(r) for r in arr[:, 1]],
                    [float(c) for c in arr[:, 2]],
                    float(arr[0, 0]),
                    float(arr[-1, 1]),
                )
            elif plugin == "images" and arr.size >= 3:
                w, h, data = int(arr.flat[0]), int(arr.flat[1]), bytes(arr.flat[2])
                value = MediaBytes(data, _suffix(data), w, h)
            if value is not None:
                rows.put(ev.step, ev.wall_time, tag, value)
                times.append(ev.wall_time)
    try:
        start = float(acc.FirstEventTimestamp())
    except ValueError:
        start = min(times, default=0.0)
    return rows, start, max(times, default=start)


def import_tensorboard(
    logdir: str | os.PathLike[str],
    dir: str | os.PathLike[str] | None = None,  # noqa: A002 - wisp.init's name
    *,
    project: str | None = None,
) -> list[str]:
    """Convert every TensorBoard run under ``logdir`` into a wisp run under ``<dir>/wisp/``.

    Returns the run directories.  A run imported before (same logdir and
    subfolder) is not imported again.  Needs the ``tensorboard`` package.
    """
    ea_mod, io_wrapper, tensor_util = _modules()
    root = os.path.abspath(os.fspath(logdir))
    if not os.path.isdir(root):
        raise RunFileError(f"no TensorBoard log directory at {root}")
    base = os.path.abspath(os.fspath(dir) if dir is not None else os.getcwd())
    subdirs: Iterable[str] = sorted(io_wrapper.GetLogdirSubdirectories(root))
    out = []
    for sub in subdirs:
        rel = os.path.relpath(sub, root)
        name = os.path.basename(root) if rel == "." else rel
        run_id = "tb-" + hashlib.sha256(os.path.abspath(sub).encode()).hexdigest()[:12]
        done = existing_run_dir(base, run_id)
        if done is not None:
            log.info("wisp: TensorBoard run %s is already imported at %s", sub, done)
            out.append(done)
            continue
        rows, start, end = _read_run(sub, ea_mod, tensor_util)
        run = ImportedRun(
            base,
            run_id=run_id,
            project=project or os.path.basename(root) or "tensorboard",
            name=name,
            created_at=start,
            origin={"imported_from": {"source": "tensorboard", "path": sub}},
        )
        for step in sorted(rows.rows):
            ts, row = rows.rows[step]
            run.log(step, ts, row)
        out.append(run.finish(end, 0))
    if not out:
        raise RunFileError(f"no TensorBoard event files under {root}")
    return out
