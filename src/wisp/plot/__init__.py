"""``wisp.plot``: custom charts with wandb's signatures, logged with ``log()``.

    wisp.log({"roc": wisp.plot.roc_curve(y_true, y_probas, labels=["cat", "dog"])})

Each function returns a :class:`CustomChart`: a :class:`wisp.Table` and a chart
spec (docs/run-file.md, ``chart``), drawn by the dashboard as a real chart.
"""

from __future__ import annotations

from wisp.plot._chart import (
    CustomChart,
    bar,
    histogram,
    line,
    line_series,
    plot_table,
    scatter,
)
from wisp.plot._curves import confusion_matrix, pr_curve, roc_curve

__all__ = [
    "CustomChart",
    "bar",
    "confusion_matrix",
    "histogram",
    "line",
    "line_series",
    "plot_table",
    "pr_curve",
    "roc_curve",
    "scatter",
]
