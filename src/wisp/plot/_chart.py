"""Custom charts: a :class:`~wisp.Table` plus a chart spec saying how to draw it.

Stored value (docs/run-file.md, "Typed values", ``chart`` version 1)::

    {"_type": "chart", "chart": "line", "path": "media/<hash>.table.json",
     "columns": [...], "rows": n, "fields": {"x": "epoch", "y": "acc", "stroke": null},
     "strings": {"title": "..."}}

``path``/``columns``/``rows`` are those of the table value (a ``wisp.table``
file).  ``chart`` is one of :data:`CHARTS`; ``fields`` maps the chart's roles
to column names and ``strings`` holds titles.  The roles per chart:

============== ===========================================================
line           x, y, stroke (optional: one line per value of that column)
scatter        x, y
bar            label, value
histogram      value (the dashboard bins the values)
line_series    step, lineKey, lineVal; strings: xname
confusion      Actual, Predicted, nPredictions (one row per cell)
curve          x, y, class (PR and ROC curves); strings: x-axis-title, y-axis-title
============== ===========================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp.errors import UsageError
from wisp.media._table import Table

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = [
    "CHARTS",
    "PRESETS",
    "CustomChart",
    "bar",
    "histogram",
    "line",
    "line_series",
    "plot_table",
    "scatter",
]

VERSION = 1
CHARTS = ("line", "scatter", "bar", "histogram", "line_series", "confusion", "curve")


#: wandb's chart presets (``vega_spec_name`` of ``plot_table``) -> (chart, its roles).
PRESETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "wandb/line/v0": ("line", ("x", "y", "stroke")),
    "wandb/scatter/v0": ("scatter", ("x", "y")),
    "wandb/bar/v0": ("bar", ("label", "value")),
    "wandb/histogram/v0": ("histogram", ("value",)),
    "wandb/lineseries/v0": ("line_series", ("step", "lineKey", "lineVal")),
    "wandb/area-under-curve/v0": ("curve", ("x", "y", "class")),
    "wandb/confusion_matrix/v1": ("confusion", ("Actual", "Predicted", "nPredictions")),
}


class CustomChart(Deferred):
    """A chart to pass to ``log()``: made by the ``wisp.plot`` functions."""

    __slots__ = ("_table", "chart", "fields", "strings")

    def __init__(
        self, table: Table, chart: str, fields: Mapping[str, str | None], strings: dict[str, str]
    ) -> None:
        if chart not in CHARTS:
            raise UsageError(f"wisp.plot chart must be one of {CHARTS}, got {chart!r}")
        self._table = table.at_log("")  # later add_data() calls do not change the chart
        self.chart = chart
        self.fields = dict(fields)
        self.strings = strings

    def estimate_bytes(self) -> int:
        return self._table.estimate_bytes()

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        tv = self._table.resolve(ctx)
        return {
            "_type": "chart",
            "chart": self.chart,
            "path": tv["path"],
            "columns": tv["columns"],
            "rows": tv["rows"],
            "fields": self.fields,
            "strings": self.strings,
        }

    def __repr__(self) -> str:
        return f"<wisp.plot {self.chart} {self.strings.get('title', '')!r}>"


def check_table(fn: str, table: Any, **columns: str | None) -> Table:
    """``table`` if it is a wisp.Table holding every named column, else UsageError."""
    if not isinstance(table, Table):
        raise UsageError(
            f"wisp.plot.{fn}(table=...) must be a wisp.Table, got {type(table).__name__}"
        )
    have = table.columns
    for role, name in columns.items():
        if name is not None and name not in have:
            raise UsageError(
                f"wisp.plot.{fn}({role}={name!r}): the table has no such column "
                f"(columns: {', '.join(have)})"
            )
    return table


def line(
    table: Table,
    x: str,
    y: str,
    stroke: str | None = None,
    title: str = "",
    split_table: bool = False,
) -> CustomChart:
    """A line chart of column ``y`` over column ``x`` (one line per ``stroke`` value)."""
    check_table("line", table, x=x, y=y, stroke=stroke)
    return CustomChart(table, "line", {"x": x, "y": y, "stroke": stroke}, {"title": title})


def scatter(
    table: Table, x: str, y: str, title: str = "", split_table: bool = False
) -> CustomChart:
    """A scatter plot of columns ``x`` and ``y``."""
    check_table("scatter", table, x=x, y=y)
    return CustomChart(table, "scatter", {"x": x, "y": y}, {"title": title})


def bar(
    table: Table, label: str, value: str, title: str = "", split_table: bool = False
) -> CustomChart:
    """A bar chart: one bar per row, named by column ``label``, as long as column ``value``."""
    check_table("bar", table, label=label, value=value)
    return CustomChart(table, "bar", {"label": label, "value": value}, {"title": title})


def histogram(table: Table, value: str, title: str = "", split_table: bool = False) -> CustomChart:
    """A histogram of the numbers in column ``value`` (binned by the dashboard)."""
    check_table("histogram", table, value=value)
    return CustomChart(table, "histogram", {"value": value}, {"title": title})


def _series(what: str, seq: Any) -> list[Any]:
    if hasattr(seq, "tolist"):
        seq = seq.tolist()
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
        raise UsageError(f"wisp.plot.line_series({what}) must be a list of numbers or of lists")
    return list(seq)


def line_series(
    xs: Any,
    ys: Any,
    keys: Any = None,
    title: str = "",
    xname: str = "x",
    split_table: bool = False,
) -> CustomChart:
    """Several lines on one chart: ``ys`` is a list of series over ``xs`` (one shared list of
    x values, or one list per series); ``keys`` names the series (default ``line_0``, ...)."""
    ys_l = [_series("ys[i]", y) for y in _series("ys", ys)]
    xs_l = _series("xs", xs)
    if xs_l and not isinstance(xs_l[0], (list, tuple)) and not hasattr(xs_l[0], "tolist"):
        xs_l = [xs_l] * len(ys_l)
    else:
        xs_l = [_series("xs[i]", x) for x in xs_l]
    if len(xs_l) != len(ys_l):
        raise UsageError(
            f"wisp.plot.line_series: {len(xs_l)} x-series for {len(ys_l)} y-series; give one "
            "shared x list or one per y-series"
        )
    names = [f"line_{i}" for i in range(len(ys_l))] if keys is None else [str(k) for k in keys]
    if len(names) != len(ys_l):
        raise UsageError(f"wisp.plot.line_series: {len(names)} keys for {len(ys_l)} y-series")
    data = [
        [x, names[i], y]
        for i, (xx, yy) in enumerate(zip(xs_l, ys_l, strict=True))
        for x, y in zip(xx, yy, strict=False)  # wandb: a longer series is cut to the shorter
    ]
    table = Table(columns=["step", "lineKey", "lineVal"], data=data)
    return CustomChart(
        table,
        "line_series",
        {"step": "step", "lineKey": "lineKey", "lineVal": "lineVal"},
        {"title": title, "xname": xname},
    )


def plot_table(
    vega_spec_name: str,
    data_table: Table,
    fields: Mapping[str, str],
    string_fields: Mapping[str, str] | None = None,
    split_table: bool = False,
) -> CustomChart:
    """wandb's ``plot_table``: a chart of one of wandb's presets (:data:`PRESETS`) over
    ``data_table``; ``fields`` maps the preset's roles to columns, ``string_fields`` holds
    titles.  A preset wisp does not draw is a UsageError naming those it does."""
    if vega_spec_name not in PRESETS:
        raise UsageError(
            f"plot_table({vega_spec_name!r}): wisp draws wandb's presets "
            f"{', '.join(PRESETS)}; a custom Vega spec is not supported (log the Table itself)"
        )
    chart, roles = PRESETS[vega_spec_name]
    if not isinstance(fields, Mapping):
        raise UsageError(f"plot_table(fields=...) must be a dict of role -> column, got {fields!r}")
    unknown = [r for r in fields if r not in roles]
    if unknown:
        raise UsageError(
            f"plot_table({vega_spec_name!r}): unknown field {unknown[0]!r} (fields: "
            f"{', '.join(roles)})"
        )
    check_table("plot_table", data_table, **{r: fields.get(r) for r in roles})
    strings = {str(k): str(v) for k, v in (string_fields or {}).items()}
    strings.setdefault("title", "")
    return CustomChart(data_table, chart, {r: fields.get(r) for r in roles}, strings)
