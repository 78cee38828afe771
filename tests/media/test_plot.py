"""wisp.plot: each chart is recorded as a table plus a spec; PR/ROC curves and confusion
matrices are computed correctly with numpy and thinned without moving their extremes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import wisp
from wisp.errors import UsageError
from wisp.plot._curves import MAX_ROWS, thin

from .conftest import read_back

RNG = np.random.default_rng(11)


def _logged(r: wisp.Run, chart: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    r.log({"c": chart})
    d = read_back(r)
    return d.scalars("c")[1][-1], d.table("c")


def test_line_chart_is_a_table_and_a_spec(run: wisp.Run):
    """plot.line stores the table's rows and the x/y/stroke roles and title."""
    t = wisp.Table(columns=["epoch", "acc", "split"], data=[[0, 0.5, "a"], [1, 0.7, "a"]])
    value, rows = _logged(run, wisp.plot.line(t, "epoch", "acc", stroke="split", title="Acc"))
    assert value["_type"] == "chart" and value["chart"] == "line"
    assert value["fields"] == {"x": "epoch", "y": "acc", "stroke": "split"}
    assert value["strings"] == {"title": "Acc"} and value["rows"] == 2
    assert rows == [{"epoch": 0, "acc": 0.5, "split": "a"}, {"epoch": 1, "acc": 0.7, "split": "a"}]


@pytest.mark.parametrize(
    ("fn", "kwargs", "chart", "fields"),
    [
        ("scatter", {"x": "a", "y": "b"}, "scatter", {"x": "a", "y": "b"}),
        ("bar", {"label": "name", "value": "b"}, "bar", {"label": "name", "value": "b"}),
        ("histogram", {"value": "a"}, "histogram", {"value": "a"}),
    ],
)
def test_table_charts(run: wisp.Run, fn: str, kwargs: dict[str, str], chart: str, fields: Any):
    """scatter, bar and histogram record their table and roles."""
    t = wisp.Table(columns=["name", "a", "b"], data=[["x", 1, 2.0], ["y", 3, 4.0]])
    value, rows = _logged(run, getattr(wisp.plot, fn)(t, **kwargs, title="T"))
    assert (value["chart"], value["fields"]) == (chart, fields)
    assert [r["a"] for r in rows] == [1, 3]


def test_chart_keeps_the_rows_it_was_made_with(run: wisp.Run):
    """Rows added to the table after the chart was made do not change the chart."""
    t = wisp.Table(columns=["x", "y"], data=[[0, 1]])
    chart = wisp.plot.scatter(t, "x", "y")
    t.add_data(1, 2)
    assert _logged(run, chart)[0]["rows"] == 1


def test_line_series_rows(run: wisp.Run):
    """line_series makes one (step, lineKey, lineVal) row per point of each series."""
    value, rows = _logged(
        run, wisp.plot.line_series([0, 1], [[1, 2], [3, 4]], keys=["a", "b"], xname="epoch")
    )
    assert value["chart"] == "line_series" and value["strings"]["xname"] == "epoch"
    assert [(r["step"], r["lineKey"], r["lineVal"]) for r in rows] == [
        (0, "a", 1),
        (1, "a", 2),
        (0, "b", 3),
        (1, "b", 4),
    ]


def test_confusion_matrix_counts(run: wisp.Run):
    """Counts match a plain loop over (actual, predicted) pairs, from probs or preds."""
    y = RNG.integers(0, 3, 500)
    probs = RNG.random((500, 3))
    value, rows = _logged(
        run, wisp.plot.confusion_matrix(probs=probs, y_true=y, class_names=["a", "b", "c"])
    )
    want = np.zeros((3, 3), int)
    for t, p in zip(y, probs.argmax(1), strict=True):
        want[t, p] += 1
    names = ["a", "b", "c"]
    got = {(r["Actual"], r["Predicted"]): r["nPredictions"] for r in rows}
    assert got == {(names[i], names[j]): int(want[i, j]) for i in range(3) for j in range(3)}
    assert value["chart"] == "confusion"


def test_confusion_matrix_without_names_uses_sorted_labels(run: wisp.Run):
    """Without class_names the classes are the sorted distinct labels, named Class_1..."""
    _, rows = _logged(
        run, wisp.plot.confusion_matrix(preds=["b", "b", "a"], y_true=["a", "b", "a"])
    )
    got = {(r["Actual"], r["Predicted"]): r["nPredictions"] for r in rows}
    assert got == {
        ("Class_1", "Class_1"): 1,
        ("Class_1", "Class_2"): 1,
        ("Class_2", "Class_1"): 0,
        ("Class_2", "Class_2"): 1,
    }


def _auc(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


def test_roc_auc_equals_the_rank_statistic(run: wisp.Run):
    """The recorded ROC curve's area equals the Mann-Whitney probability P(score+ > score-)."""
    y = RNG.integers(0, 2, 2000)
    s = np.round(RNG.random(2000) * 0.5 + y * 0.3, 2)  # ties included
    value, rows = _logged(
        run, wisp.plot.roc_curve(y, np.stack([1 - s, s], 1), labels=["neg", "pos"])
    )
    for label, sp, sn in [("pos", s[y == 1], s[y == 0]), ("neg", 1 - s[y == 0], 1 - s[y == 1])]:
        pts = [r for r in rows if r["class"] == label]  # "neg" reuses the sort of "pos"
        fpr = np.array([r["fpr"] for r in pts])
        tpr = np.array([r["tpr"] for r in pts])
        want = (sp[:, None] > sn[None, :]).mean() + 0.5 * (sp[:, None] == sn[None, :]).mean()
        assert abs(_auc(fpr, tpr) - want) < 1e-9
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)
    assert value["strings"]["x-axis-title"] == "False positive rate"


def test_multiclass_roc_auc_per_class(run: wisp.Run):
    """With three unrelated score columns each class's ROC area is its own rank statistic."""
    y = RNG.integers(0, 3, 900)
    probas = RNG.random((900, 3)) + np.eye(3)[y] * 0.3
    _, rows = _logged(run, wisp.plot.roc_curve(y, probas))
    for k in range(3):
        pts = [(r["fpr"], r["tpr"]) for r in rows if r["class"] == str(k)]
        fpr, tpr = np.array(pts).T
        sp, sn = probas[y == k, k], probas[y != k, k]
        want = (sp[:, None] > sn[None, :]).mean() + 0.5 * (sp[:, None] == sn[None, :]).mean()
        assert abs(_auc(fpr, tpr) - want) < 1e-9


def test_pr_curve_points_match_a_direct_count(run: wisp.Run):
    """Each recorded (recall, precision) is the direct count at some threshold."""
    y = RNG.integers(0, 2, 300)
    s = RNG.random(300)
    _, rows = _logged(run, wisp.plot.pr_curve(y, s, classes_to_plot=[1]))
    assert {r["class"] for r in rows} == {"1"}
    direct = set()
    for t in np.unique(s):
        pred = s >= t
        tp = int((pred & (y == 1)).sum())
        direct.add((round(tp / (y == 1).sum(), 12), round(tp / pred.sum(), 12)))
    got = {(round(r["recall"], 12), round(r["precision"], 12)) for r in rows[1:]}
    assert got <= direct and len(got) == len(direct)
    assert (rows[0]["recall"], rows[0]["precision"]) == (0.0, 1.0)


def test_million_predictions_are_thinned_keeping_extremes(run: wisp.Run):
    """1M predictions give at most MAX_ROWS rows, with the curve's end points kept."""
    n = 1_000_000
    y = RNG.integers(0, 2, n)
    s = RNG.random(n) * 0.7 + y * 0.3
    value, rows = _logged(run, wisp.plot.roc_curve(y, np.stack([1 - s, s], 1)))
    assert value["rows"] <= MAX_ROWS
    for c in ("0", "1"):
        pts = [(r["fpr"], r["tpr"]) for r in rows if r["class"] == c]
        assert pts[0] == (0.0, 0.0) and pts[-1] == (1.0, 1.0)


def test_thin_keeps_first_last_and_extremes():
    """thin() keeps at most about `limit` indices including the ends and the min/max points."""
    x = np.linspace(0, 1, 10_000)
    y = np.sin(x * 20)
    keep = thin(x, y, 100)
    assert len(keep) <= 100 and keep[0] == 0 and keep[-1] == 9_999
    assert int(np.argmax(y)) in keep and int(np.argmin(y)) in keep


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: wisp.plot.line(wisp.Table(columns=["a"]), "a", "b"), r"y='b'.*no such column"),
        (lambda: wisp.plot.scatter([[1, 2]], "a", "b"), "must be a wisp.Table"),
        (lambda: wisp.plot.roc_curve([0, 1], [[0.1, 0.9]]), r"shape \(1, 2\)"),
        (lambda: wisp.plot.pr_curve([0, 1, 2], [0.1, 0.2, 0.3]), "1-D but y_true has 3"),
        (
            lambda: wisp.plot.confusion_matrix(preds=[0, 5], y_true=[0, 1], class_names=["a", "b"]),
            "0 to 1",
        ),
        (lambda: wisp.plot.confusion_matrix(y_true=[0]), "exactly one of probs"),
        (lambda: wisp.plot.line_series([0, 1], [[1, 2]], keys=["a", "b"]), "2 keys for 1"),
    ],
)
def test_bad_input_is_refused_clearly(call: Any, match: str):
    """Wrong tables, columns, shapes and labels raise UsageError naming what was expected."""
    with pytest.raises(UsageError, match=match):
        call()


@pytest.mark.parametrize(
    "name",
    [
        "line",
        "scatter",
        "bar",
        "histogram",
        "line_series",
        "confusion_matrix",
        "pr_curve",
        "roc_curve",
    ],
)
def test_signatures_match_wandb(name: str):
    """Each wisp.plot function takes wandb.plot's parameters, in order, with its defaults."""
    import inspect

    wandb_plot = pytest.importorskip("wandb.plot")

    def params(fn: Any) -> list[tuple[str, Any]]:
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(getattr(wisp.plot, name)) == params(getattr(wandb_plot, name))
