"""Evaluation charts computed with numpy alone: confusion matrix, PR and ROC curves.

Each class's scores are sorted once (``argsort``; a class whose scores fall as the
previous class's rise, as in binary ``[1 - p, p]``, reuses that order); true/false positive counts
at every distinct threshold come from cumulative sums, so 1M predictions take
a fraction of a second.  Curves are thinned to at most :data:`MAX_ROWS` table
rows in all, by even steps along the curve's length, always keeping its first
and last points and the points where x or y is smallest or largest.
"""

from __future__ import annotations

from typing import Any

from wisp.errors import UsageError
from wisp.media._table import Table
from wisp.plot._chart import CustomChart

__all__ = [
    "MAX_CLASSES",
    "MAX_ROWS",
    "confusion_matrix",
    "curve_points",
    "pr_curve",
    "roc_curve",
    "thin",
]

MAX_ROWS = 4000
MAX_CLASSES = 300


def _np() -> Any:
    try:
        import numpy as np
    except ImportError as exc:
        raise ImportError("wisp.plot needs numpy; install it with `pip install numpy`") from exc
    return np


def _array(fn: str, what: str, value: Any) -> Any:
    np = _np()
    if value is None:
        raise UsageError(f"wisp.plot.{fn}() needs {what}=")
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"wisp.plot.{fn}({what}=...) is not an array ({exc})") from None


def thin(x: Any, y: Any, limit: int) -> Any:
    """Indices of at most about ``limit`` points of the curve (x, y), extremes kept."""
    np = _np()
    n = len(x)
    if n <= limit:
        return np.arange(n)
    step = np.abs(np.diff(x)) + np.abs(np.diff(y))
    s = np.concatenate([[0.0], np.cumsum(step)])
    targets = np.linspace(0.0, s[-1], max(2, limit - 6))
    idx = np.searchsorted(s, targets, side="left").clip(0, n - 1)
    keep = [idx, [0, n - 1, np.argmin(x), np.argmax(x), np.argmin(y), np.argmax(y)]]
    return np.unique(np.concatenate(keep))


def curve_points(
    y_true: Any, scores: Any, positive: Any, order: Any = None
) -> tuple[Any, Any, int, int, Any]:
    """(tps, fps, P, N, order) at each distinct threshold; ``order`` sorts the scores high to
    low (computed when not given)."""
    np = _np()
    if order is None:
        order = np.argsort(scores)[::-1]  # ties: only the counts at each run's end are used
    s = scores[order]
    hit = (y_true == positive)[order]  # compare first: gathering bools moves 8x less memory
    tps = np.cumsum(hit, dtype=np.int64)
    fps = np.arange(1, len(s) + 1, dtype=np.int64) - tps
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]  # the end of each threshold run
    return tps[last], fps[last], int(tps[-1]), int(fps[-1]), order


def _classes(
    fn: str, y_true: Any, y_probas: Any, labels: Any, classes_to_plot: Any
) -> tuple[Any, Any, list[tuple[Any, str, Any]]]:
    np = _np()
    yt = _array(fn, "y_true", y_true).reshape(-1)
    yp = _array(fn, "y_probas", y_probas)
    if yp.dtype.kind not in "biuf":
        raise UsageError(f"wisp.plot.{fn}(y_probas=...) has dtype {yp.dtype}; expected numbers")
    if yp.ndim not in (1, 2) or len(yp) != len(yt):
        raise UsageError(
            f"wisp.plot.{fn}: y_probas has shape {yp.shape}; expected (N, classes) or (N,) "
            f"for the N = {len(yt)} labels in y_true"
        )
    if len(yt) == 0:
        raise UsageError(f"wisp.plot.{fn}: y_true is empty")
    if yt.dtype.kind in "iu" and yt.min() >= 0 and yt.max() < 1 << 16:
        classes = np.flatnonzero(np.bincount(yt)).astype(yt.dtype)  # no sort needed
    else:
        classes = np.unique(yt)
    if yp.ndim == 1:  # binary: the score of the last (positive) class
        yp = np.stack([1.0 - yp, yp], axis=1) if len(classes) <= 2 else None
        if yp is None:
            raise UsageError(
                f"wisp.plot.{fn}: y_probas is 1-D but y_true has {len(classes)} classes; give "
                "one column per class"
            )
        if len(classes) == 1:
            classes = np.array([0, 1]) if classes[0] in (0, 1) else classes
    if yp.shape[1] < len(classes):
        raise UsageError(
            f"wisp.plot.{fn}: y_probas has {yp.shape[1]} columns for {len(classes)} classes in "
            "y_true; expected one column per class"
        )
    wanted = classes if classes_to_plot is None else np.asarray(classes_to_plot)
    out = []
    for i, c in enumerate(classes):
        if c not in wanted:
            continue
        name = c
        if labels is not None and np.issubdtype(classes.dtype, np.integer):
            try:
                name = labels[int(c)]
            except (IndexError, KeyError):
                raise UsageError(
                    f"wisp.plot.{fn}(labels=...) has no label for class {int(c)}"
                ) from None
        out.append((c, str(name.item() if hasattr(name, "item") else name), yp[:, i]))
    return yt, yp, out


def _curve(
    fn: str, y_true: Any, y_probas: Any, labels: Any, classes_to_plot: Any, roc: bool
) -> tuple[list[str], Any, Any]:
    np = _np()
    yt, _, per_class = _classes(fn, y_true, y_probas, labels, classes_to_plot)
    limit = max(50, MAX_ROWS // max(1, len(per_class)))
    names: list[str] = []
    xs, ys = [], []
    prev = None  # the last class's order, high to low
    for c, name, scores in per_class:
        order = None
        if prev is not None:
            along = scores[prev]
            if (along[1:] >= along[:-1]).all():  # e.g. binary [1 - p, p]: one sort serves both
                order = prev[::-1]
        tps, fps, p, n, prev = curve_points(yt, scores, c, order)
        if roc:
            x = np.r_[0.0, fps / max(n, 1)]
            y = np.r_[0.0, tps / max(p, 1)]
        else:
            x = np.r_[0.0, tps / max(p, 1)]  # recall
            y = np.r_[1.0, tps / np.maximum(tps + fps, 1)]  # precision
        keep = thin(x, y, limit)
        xs.append(x[keep])
        ys.append(y[keep])
        names.extend([name] * len(keep))
    return names, np.concatenate(xs), np.concatenate(ys)


def _curve_chart(
    names: list[str], x: Any, y: Any, cols: tuple[str, str], strings: dict[str, str]
) -> CustomChart:
    table = Table(columns=["class", cols[0], cols[1]])
    for row in zip(names, x.tolist(), y.tolist(), strict=True):
        table.add_data(*row)
    return CustomChart(table, "curve", {"x": cols[0], "y": cols[1], "class": "class"}, strings)


def pr_curve(
    y_true: Any = None,
    y_probas: Any = None,
    labels: list[str] | None = None,
    classes_to_plot: list[Any] | None = None,
    interp_size: int = 21,
    title: str = "Precision-Recall Curve",
    split_table: bool = False,
) -> CustomChart:
    """Precision over recall for each class (one-vs-rest), from ``y_true`` labels and
    ``y_probas`` scores, (N, classes) or (N,) for binary labels.  ``interp_size`` is
    accepted for wandb's signature: the curve is recorded exactly, thinned, not resampled."""
    names, x, y = _curve("pr_curve", y_true, y_probas, labels, classes_to_plot, roc=False)
    strings = {"title": title, "x-axis-title": "Recall", "y-axis-title": "Precision"}
    return _curve_chart(names, x, y, ("recall", "precision"), strings)


def roc_curve(
    y_true: Any,
    y_probas: Any = None,
    labels: list[str] | None = None,
    classes_to_plot: list[Any] | None = None,
    title: str = "ROC Curve",
    split_table: bool = False,
) -> CustomChart:
    """True over false positive rate for each class (one-vs-rest); arguments as pr_curve."""
    names, x, y = _curve("roc_curve", y_true, y_probas, labels, classes_to_plot, roc=True)
    strings = {
        "title": title,
        "x-axis-title": "False positive rate",
        "y-axis-title": "True positive rate",
    }
    return _curve_chart(names, x, y, ("fpr", "tpr"), strings)


def confusion_matrix(
    probs: Any = None,
    y_true: Any = None,
    preds: Any = None,
    class_names: list[str] | None = None,
    title: str = "Confusion Matrix Curve",
    split_table: bool = False,
) -> CustomChart:
    """Counts of (actual, predicted) class pairs, from ``preds`` or the argmax of ``probs``.

    With ``class_names`` labels are class indices 0..K-1; without, the classes are the
    sorted distinct labels, named ``Class_1``, ``Class_2``, ...
    """
    np = _np()
    if (probs is None) == (preds is None):
        raise UsageError("wisp.plot.confusion_matrix() takes exactly one of probs= or preds=")
    yt = _array("confusion_matrix", "y_true", y_true).reshape(-1)
    if probs is not None:
        pr = _array("confusion_matrix", "probs", probs)
        if pr.ndim != 2:
            raise UsageError(
                f"wisp.plot.confusion_matrix(probs=...) has shape {pr.shape}; expected (N, classes)"
            )
        pd = pr.argmax(axis=1)
    else:
        pd = _array("confusion_matrix", "preds", preds).reshape(-1)
    if len(pd) != len(yt):
        raise UsageError(
            f"wisp.plot.confusion_matrix: {len(pd)} predictions for {len(yt)} true labels"
        )
    if class_names is not None:
        names = [str(n) for n in class_names]
        k = len(names)
        both = np.concatenate([yt, pd])
        if both.dtype.kind not in "iu" and both.size and not (both == np.rint(both)).all():
            raise UsageError(
                "wisp.plot.confusion_matrix: with class_names, labels must be class indices"
            )
        both = both.astype(np.int64)
        if both.size and (both.min() < 0 or both.max() >= k):
            raise UsageError(
                f"wisp.plot.confusion_matrix: labels must be 0 to {k - 1} for {k} class_names, "
                f"got {int(both.min())} to {int(both.max())}"
            )
        ti, pi = both[: len(yt)], both[len(yt) :]
    else:
        values, inverse = np.unique(np.concatenate([yt, pd]), return_inverse=True)
        k = len(values)
        names = [f"Class_{i + 1}" for i in range(k)]
        ti, pi = inverse[: len(yt)], inverse[len(yt) :]
    if k > MAX_CLASSES:
        raise UsageError(f"wisp.plot.confusion_matrix: {k} classes; at most {MAX_CLASSES}")
    counts = np.bincount(ti * k + pi, minlength=k * k).reshape(k, k)
    table = Table(columns=["Actual", "Predicted", "nPredictions"])
    for i in range(k):
        for j in range(k):
            table.add_data(names[i], names[j], int(counts[i, j]))
    fields = {"Actual": "Actual", "Predicted": "Predicted", "nPredictions": "nPredictions"}
    return CustomChart(table, "confusion", fields, {"title": title})
