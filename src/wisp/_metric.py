"""``define_metric``: its arguments, the object it returns, and the summaries it asks for.

A METRIC record (docs/run-file.md) holds the merged spec of one name (glob)::

    {"name": glob, "step_metric": key | null, "step_sync": bool, "summary": "min,max",
     "goal": "minimize" | "maximize" | null, "hidden": bool}

``summary`` is a comma-separated set of ``last``, ``min``, ``max``, ``mean``, ``first``,
``best`` (min or max by ``goal``), ``copy`` (= last) or ``none``.  Calls for the same
name merge, as wandb's do (``summary="min"`` then ``summary="max"`` keeps both).  One
kind keeps wisp's flat summary value (``summary["loss"]`` is the minimum); several
store one key per kind, flattened like every nested value (``loss/min``,
``loss/max``), so ``summary["loss"]`` reads ``{"min": ..., "max": ...}`` as in wandb.

The calling thread checks and merges (``parse``, ``merge``); the writer thread keeps
the aggregates (``update_summary``) and fills in step metrics (``StepSync``).
"""

from __future__ import annotations

import math

from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "SUMMARY_KINDS",
    "Metric",
    "StepSync",
    "merge",
    "spec_for",
    "summary_over",
    "update_special",
    "update_summary",
]

SUMMARY_KINDS = ("last", "min", "max", "mean", "first", "best", "copy", "none")
GOALS = ("minimize", "maximize")


class Metric:
    """What ``define_metric()`` returns: the merged definition of one metric (or glob)."""

    __slots__ = ("goal", "hidden", "name", "step_metric", "step_sync", "summary")

    def __init__(self, spec: dict[str, Any]) -> None:
        self.name: str = spec["name"]
        self.step_metric: str | None = spec["step_metric"]
        self.step_sync: bool = spec["step_sync"]
        self.hidden: bool = spec["hidden"]
        self.summary: tuple[str, ...] = tuple(spec["summary"].split(","))
        self.goal: str | None = spec["goal"]

    def __repr__(self) -> str:
        return (
            f"<wisp.Metric {self.name!r} step_metric={self.step_metric!r} "
            f"summary={','.join(self.summary)!r} goal={self.goal!r}>"
        )


def _kinds(name: str, summary: Any) -> list[str]:
    if not isinstance(summary, str):
        raise UsageError(f"define_metric({name!r}) summary must be a string, got {summary!r}")
    kinds = [s.strip().lower() for s in summary.split(",") if s.strip()]
    for k in kinds:
        if k not in SUMMARY_KINDS:
            raise UsageError(
                f"define_metric({name!r}) summary {k!r} is not one of {', '.join(SUMMARY_KINDS)} "
                "(several may be joined with commas: 'min,max')"
            )
    return kinds


def merge(
    previous: dict[str, Any] | None,
    name: Any,
    step_metric: Any,
    step_sync: Any,
    hidden: Any,
    summary: Any,
    goal: Any,
    overwrite: Any,
) -> dict[str, Any]:
    """The spec of ``name`` after this call, merged with ``previous`` unless ``overwrite``."""
    from wisp._protocol import key_problem

    if not isinstance(name, str) or key_problem(name) is not None:
        raise UsageError(
            f"define_metric() name must be a metric key, got {name!r}: "
            f"{key_problem(name) if isinstance(name, str) else 'not a string'}"
        )
    if isinstance(step_metric, Metric):
        step_metric = step_metric.name
    if step_metric is not None and (
        not isinstance(step_metric, str) or key_problem(step_metric) is not None
    ):
        raise UsageError(f"define_metric({name!r}) step_metric must be a metric key")
    for what, value in (("step_sync", step_sync), ("hidden", hidden), ("overwrite", overwrite)):
        if value is not None and not isinstance(value, bool):
            raise UsageError(f"define_metric({name!r}) {what} must be a bool, got {value!r}")
    if goal is not None:
        goal = {"min": "minimize", "max": "maximize"}.get(goal, goal)
        if goal not in GOALS:
            raise UsageError(
                f"define_metric({name!r}) goal must be 'minimize' or 'maximize', got {goal!r}"
            )
    base = previous if previous is not None and not overwrite else None
    kinds = list(base["summary"].split(",")) if base else []
    if summary is not None:
        new = _kinds(name, summary)
        kinds = new if overwrite or "none" in new else [k for k in kinds if k != "none"] + new
    kinds = list(dict.fromkeys(kinds)) or ["last"]
    if step_metric is None and base:
        step_metric = base["step_metric"]
    if goal is None and base:
        goal = base["goal"]
    if "best" in kinds and goal is None:
        raise UsageError(
            f"define_metric({name!r}) summary 'best' needs goal='minimize' or 'maximize'"
        )
    if step_sync is None:
        step_sync = base["step_sync"] if base else step_metric is not None
    if hidden is None:
        hidden = base["hidden"] if base else False
    return {
        "name": name,
        "step_metric": step_metric,
        "step_sync": step_sync,
        "summary": ",".join(kinds),
        "goal": goal,
        "hidden": hidden,
    }


class _Agg:
    __slots__ = ("count", "first", "max", "min", "sum")

    def __init__(self, first: Any) -> None:
        self.first = first
        self.min = math.inf
        self.max = -math.inf
        self.sum = 0.0
        self.count = 0


def update_summary(
    summary: dict[str, Any], aggs: dict[str, Any], key: str, value: Any, spec: dict[str, Any]
) -> None:
    """Fold one logged ``value`` of ``key`` into ``summary`` as ``spec["summary"]`` asks."""
    how: str = spec.get("summary", "last")
    kinds = how.split(",")
    agg = aggs.get(key)
    if agg is None:
        agg = aggs[key] = _Agg(value)
    number = type(value) in (int, float) and not math.isnan(value)
    if number:
        agg.min = min(agg.min, value)
        agg.max = max(agg.max, value)
        agg.sum += value
        agg.count += 1
    several = len(kinds) > 1
    if several:
        summary.pop(key, None)  # read back nested: summary[key] is {kind: value}
    for kind in kinds:
        if kind in ("last", "copy"):
            out = value
        elif kind == "first":
            out = agg.first
        elif kind == "none" or not agg.count:
            continue
        elif kind == "min" or (kind == "best" and spec.get("goal") == "minimize"):
            out = agg.min
        elif kind in ("max", "best"):
            out = agg.max
        else:  # mean
            out = agg.sum / agg.count
        summary[f"{key}/{kind}" if several else key] = out


def spec_for(
    cache: dict[str, dict[str, Any] | None], metrics: list[dict[str, Any]], key: str
) -> dict[str, Any] | None:
    """The ``define_metric`` spec whose name (a glob) matches ``key``, the last defined
    first; ``cache`` remembers each key's (clear it when a metric is defined)."""
    try:
        return cache[key]
    except KeyError:
        from fnmatch import fnmatchcase

        spec = None
        for m in reversed(metrics):
            if fnmatchcase(key, m["name"]):
                spec = m
                break
        cache[key] = spec
        return spec


def update_special(
    summary: dict[str, Any],
    aggs: dict[str, Any],
    values: dict[str, Any],
    spec_of: Callable[[str], dict[str, Any] | None],
) -> None:
    """Fold one row's ``values`` into ``summary``, each key as its spec asks (``spec_of``)."""
    for key, value in values.items():
        spec = spec_of(key)
        how = spec.get("summary", "last") if spec else "last"
        if how == "last":
            summary[key] = value
        elif how != "none":
            update_summary(summary, aggs, key, value, spec)  # type: ignore[arg-type]


def summary_over(key: str, spec: dict[str, Any], values: Any) -> dict[str, Any]:
    """What :func:`update_summary` leaves for ``key`` once fed ``values`` (a non-empty
    float64 numpy array, in step order), computed on the whole array at once."""
    import numpy as np

    out: dict[str, Any] = {}
    agg = _Agg(float(values[0]))
    rest = values[:-1]
    num = rest[~np.isnan(rest)]
    if len(num):
        agg.min, agg.max = float(num.min()), float(num.max())
        agg.sum, agg.count = float(np.cumsum(num)[-1]), len(num)  # in order, as the writer
    update_summary(out, {key: agg}, key, float(values[-1]), spec)
    return out


class StepSync:
    """``step_sync``: a row holding a metric but not its step metric gets the step
    metric's last logged value (wandb inserts it the same way)."""

    __slots__ = ("_last", "names")

    def __init__(self) -> None:
        self.names: set[str] = set()  # step metrics some synced metric uses
        self._last: dict[str, Any] = {}

    def add(self, spec: dict[str, Any]) -> None:
        if spec.get("step_sync") and spec.get("step_metric"):
            self.names.add(spec["step_metric"])

    def apply(self, values: dict[str, Any], spec_for: Callable[[str], Any]) -> None:
        last = self._last
        for name in self.names.intersection(values):
            last[name] = values[name]
        missing: dict[str, Any] = {}
        for key in values:
            spec = spec_for(key)
            if spec and spec.get("step_sync"):
                sm = spec.get("step_metric")
                if sm and sm not in values and sm in last:
                    missing[sm] = last[sm]
        values.update(missing)
