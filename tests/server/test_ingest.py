"""Batch validation: the column-wise fast path agrees with the row-by-row general path."""

from __future__ import annotations

import math
from typing import Any

import pytest

from wisp.server.http.problem import Problem
from wisp.server.store.ingest import _fast_history, _slow_history, prepare_records


def _columns(prep: Any) -> list[tuple[Any, ...]]:
    return [
        (c.key, list(c.steps), list(c.times), list(c.values), list(c.nfs or [0] * len(c.steps)))
        for c in prep.points
    ]


@pytest.mark.parametrize(
    "values",
    [
        [0.5, -1.25, 3.0],
        [1, 2, 3],
        [1, 2.5, -(2**60)],
        [math.nan, math.inf, -math.inf],
        [1e308, 1e308, 1.0],
    ],
)
def test_fast_path_equals_general_path(values: list[Any]) -> None:
    """Rows that share their keys give the same columns, NaN/inf codes included."""
    rows = [[i, 100 + i, {"x": v, "y": 1.0}] for i, v in enumerate(values)]
    fast = _fast_history(rows, "f")
    assert fast is not None
    assert _columns(fast) == _columns(_slow_history(rows, "f"))
    assert [c.key for c in fast.points] == ["x", "y"]


@pytest.mark.parametrize(
    "rows",
    [
        [[0, 1.0, {"x": 1.0}], [1, 1.0, {"y": 1.0}]],
        [[0, 1.0, {"x": 1.0}], [1, 1.0, {"x": True}]],
        [[0, 1.0, {"x": 2**2000}]],
        [[0, 1.0, {"x": "text"}]],
        [[0, 1.0, {"x": {"_type": "image"}}]],
        [[0, math.inf, {"x": 1.0}]],
    ],
)
def test_fast_path_declines_what_it_cannot_check(rows: list[Any]) -> None:
    """Mixed keys, bools, huge ints, strings, media and bad timestamps take the general path."""
    assert _fast_history(rows, "f") is None


@pytest.mark.parametrize(
    ("rows", "field"),
    [
        ([[0, 1.0, {"x": 1.0}], [-1, 1.0, {"x": 1.0}]], "records[0].data.rows[1][0]"),
        ([[0, 1.0, {"x": 1.0}], [1, math.nan, {"x": 1.0}]], "records[0].data.rows[1][1]"),
        ([[0, 1.0, {"x": 1.0}], [1, 1.0, [1.0]]], "records[0].data.rows[1][2]"),
        ([[0, 1.0, {"": 1.0}]], "records[0].data.rows.<key>"),
        ([[0, 1.0, {"x": 1.0}], [1, 1.0]], "records[0].data.rows[1]"),
    ],
)
def test_bad_rows_name_the_field(rows: list[Any], field: str) -> None:
    """A malformed row is refused with 422 naming it, whichever path looked first."""
    with pytest.raises(Problem) as e:
        prepare_records([{"type": 3, "data": {"rows": rows}}])
    assert e.value.status == 422 and e.value.field == field


def test_a_step_out_of_range_is_refused_with_the_protocols_rule() -> None:
    """A step at 2**62 is refused naming the row and the rule the SDK checks at log() (wisp._protocol.step_problem)."""
    with pytest.raises(Problem) as e:
        prepare_records(
            [{"type": 3, "data": {"rows": [[0, 1.0, {"x": 1.0}], [2**62, 1.0, {"x": 1.0}]]}}]
        )
    assert e.value.field == "records[0].data.rows[1][0]"
    assert "step must be >= 0 and < 2**62, got 4611686018427387904" in str(e.value)
