"""``define_metric`` rules and summaries (``wisp._metric``)."""

from __future__ import annotations

import pytest

from wisp._metric import StepSync, merge, update_summary
from wisp.errors import UsageError


def _spec(prev: dict[str, object] | None = None, **kw: object) -> dict[str, object]:
    args = {"step_metric": None, "step_sync": None, "hidden": None, "summary": None}
    args.update({"goal": None, "overwrite": None, **kw})
    return merge(prev, "loss", *args.values())  # type: ignore[arg-type]


def test_calls_merge_unless_overwrite() -> None:
    """A second call adds summary kinds; overwrite=True replaces them."""
    first = _spec(summary="min")
    assert _spec(first, summary="max")["summary"] == "min,max"
    assert _spec(first, summary="max", overwrite=True)["summary"] == "max"
    assert _spec(summary="MIN, max")["summary"] == "min,max"


def test_bad_arguments_name_the_metric() -> None:
    """Unknown kinds, best without goal and a bad goal are refused naming the metric."""
    with pytest.raises(UsageError, match=r"'loss'.*'median'"):
        _spec(summary="median")
    with pytest.raises(UsageError, match="needs goal"):
        _spec(summary="best")
    with pytest.raises(UsageError, match="goal must be"):
        _spec(goal="up")


def test_summary_kinds_are_folded() -> None:
    """One kind keeps a flat value; several give key/kind; best follows the goal."""
    s: dict[str, object] = {}
    aggs: dict[str, object] = {}
    spec = _spec(summary="min,max,first,mean")
    for v in (3.0, 1.0, 5.0):
        update_summary(s, aggs, "loss", v, spec)
    assert s == {"loss/min": 1.0, "loss/max": 5.0, "loss/first": 3.0, "loss/mean": 3.0}
    s2: dict[str, object] = {}
    best = _spec(summary="best", goal="maximize")
    for v in (3.0, 7.0, 5.0):
        update_summary(s2, aggs, "acc", v, best)
    assert s2 == {"acc": 7.0}


def test_step_sync_fills_the_last_step_value() -> None:
    """A row without its step metric gets the step metric's last logged value."""
    sync = StepSync()
    spec = {"step_metric": "epoch", "step_sync": True}
    sync.add(spec)
    row1 = {"epoch": 2, "x": 1}
    sync.apply(row1, lambda k: spec if k == "val" else None)
    row2 = {"val": 0.5}
    sync.apply(row2, lambda k: spec if k == "val" else None)
    assert row2 == {"val": 0.5, "epoch": 2}
