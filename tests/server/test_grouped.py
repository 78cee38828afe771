"""Grouped series: per-group aggregates equal the ones computed here from the logged data."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import pytest

from tests.server.conftest import Api
from wisp.server.series.buckets import series, step_grid
from wisp.server.series.grouped import grouped_series
from wisp.server.store.ingest import prepare_records

LRS = (0.1, 0.01, 0.001)


def _log(
    store: Any, runs: int, steps: range, seed: int = 1, keep: float = 0.95
) -> dict[str, dict[int, float]]:
    """``runs`` runs in project ``p``, config.lr cycling through LRS; run id -> step -> loss."""
    rng = random.Random(seed)
    data: dict[str, dict[int, float]] = {}
    for i in range(runs):
        rid = f"run{i:02d}"
        store.put_run(rid, {"project": "p", "created_at": float(i)})
        vals = {s: rng.uniform(0, 10) for s in steps if rng.random() < keep}
        if i == 0:  # a non-finite value is not a value
            vals[steps[3]] = math.nan
        data[rid] = vals
        cfg = {"lr": LRS[i % 3], "opt": {"name": "adam" if i % 2 else "sgd"}}
        recs = [{"type": 2, "data": {"config": cfg}}]
        rows = [[s, 1.0 + s, {"loss": v}] for s, v in sorted(vals.items())]
        for j in range(0, len(rows), 5000):
            recs.append({"type": 3, "data": {"rows": rows[j : j + 5000]}})
        store.ingest(rid, "w", 0, prepare_records(recs))
    return data


def _bucket(g: dict[str, Any], buckets: int) -> Any:
    """step -> bucket on a grid of the answer: ``width`` steps from ``origin``, or (width 0)
    the proportional buckets of the per-run series, ``(step - first) * buckets // span``."""
    origin, width, first, span = g["origin"], g["width"], g["first"], g["last"] - g["first"] + 1
    if width:
        return lambda s: (s - origin) // width
    return lambda s: (s - first) * buckets // span


def _starts(g: dict[str, Any], buckets: int, want: dict[int, Any]) -> list[int]:
    """The first step of each bucket of ``want`` (the x the answer gives a bucket)."""
    b = _bucket(g, buckets)
    if g["width"]:
        return [g["origin"] + i * g["width"] for i in sorted(want)]
    return [next(s for s in range(g["first"], g["last"] + 1) if b(s) == i) for i in sorted(want)]


def _expect(
    data: dict[str, dict[int, float]], rids: list[str], bucket: Any, lo: int, hi: int
) -> dict[int, dict[str, Any]]:
    """Per bucket: the stats of each run's last finite-or-not value, and the point envelope."""
    out: dict[int, dict[str, Any]] = {}
    for rid in rids:
        last: dict[int, tuple[int, float]] = {}
        for s, v in data[rid].items():
            if not lo <= s <= hi:
                continue
            b = bucket(s)
            if b not in last or s > last[b][0]:
                last[b] = (s, v)
            e = out.setdefault(b, {"vals": [], "pts": []})
            if math.isfinite(v):
                e["pts"].append(v)
        for b, (_s, v) in last.items():
            if math.isfinite(v):
                out[b]["vals"].append(v)
    return out


def _check(series: dict[str, Any], want: dict[int, dict[str, Any]], xs: list[int]) -> None:
    assert series["x"] == xs
    for i, b in enumerate(sorted(want)):
        vals, pts = want[b]["vals"], want[b]["pts"]
        assert series["n"][i] == len(vals)
        assert series["lo"][i] == min(pts) and series["hi"][i] == max(pts)
        if not vals:
            assert series["mean"][i] is None
            continue
        assert series["mean"][i] == pytest.approx(statistics.fmean(vals), rel=1e-12)
        assert series["median"][i] == pytest.approx(statistics.median(vals), rel=1e-12)
        assert series["std"][i] == pytest.approx(statistics.pstdev(vals), rel=1e-9, abs=1e-12)
        assert series["min"][i] == min(vals) and series["max"][i] == max(vals)


def test_raw_steps_grouped_by_learning_rate(store: Any) -> None:
    """With a bucket per step, each group's mean/median/std/min/max are those of its runs."""
    data = _log(store, 9, range(0, 300))
    out = grouped_series(store, "p", keys=["loss"], group_by=["config.lr"], buckets=1000)
    assert [g["values"] for g in out["groups"]] == [[0.001], [0.01], [0.1]]
    assert out["grids"] == [{"key": "loss", "origin": 0, "width": 1, "first": 0, "last": 299}]
    for g in out["groups"]:
        lr = g["values"][0]
        rids = [f"run{i:02d}" for i in range(9) if LRS[i % 3] == lr]
        assert g["runs"] == rids
        want = _expect(data, rids, lambda s: s, 0, 299)
        _check(g["series"][0], want, sorted(want))


def test_grid_and_zoom_match_the_data(store: Any) -> None:
    """Downsampled (whole chunks by their aggregates, 64-step-block or proportional buckets)
    and zoomed, the aggregates are still exact."""
    data = _log(store, 4, range(0, 40_000, 3), seed=2)
    for lo, hi, buckets in ((None, None, 50), (1001, 30_007, 40), (500, 900, 7)):
        out = grouped_series(
            store, "p", keys=["loss"], group_by=["config.opt.name"], lo=lo, hi=hi, buckets=buckets
        )
        g0 = out["grids"][0]
        first = min(s for d in data.values() for s in d if lo is None or s >= lo)
        last = max(s for d in data.values() for s in d if hi is None or s <= hi)
        assert (g0["first"], g0["last"]) == (first, last)
        assert (g0["origin"], g0["width"]) == step_grid(first, last, buckets)
        assert (g0["width"] % 64 == 0) if hi is None or hi > 10_000 else g0["width"] == 0
        for g in out["groups"]:
            s = g["series"][0]
            assert len(s["x"]) <= buckets
            want = _expect(data, g["runs"], _bucket(g0, buckets), first, last)
            _check(s, want, _starts(g0, buckets, want))


def test_one_run_lines_up_with_its_series(store: Any) -> None:
    """A group of one run has the per-run series' buckets: same x, last value, min and max."""
    _log(store, 1, range(0, 5000), seed=4, keep=1.0)  # every step: x is a bucket's start
    for lo, hi, buckets in (
        (None, None, 300),
        (None, None, 40),
        (None, None, 10),
        (700, 1900, 300),
    ):
        out = grouped_series(store, "p", keys=["loss"], group_by=[], lo=lo, hi=hi, buckets=buckets)
        g = out["groups"][0]["series"][0]
        [one] = series(store, ["run00"], ["loss"], lo=lo, hi=hi, buckets=buckets)
        assert g["x"] == one["x"]
        assert g["mean"] == one["last"] and g["lo"] == one["min"] and g["hi"] == one["max"]


@pytest.mark.parametrize("keep", [1.0, 0.9])
def test_many_points_in_a_fine_range_coarsen_the_grid(
    store: Any, monkeypatch: Any, keep: float
) -> None:
    """Past MAX_POINTS to decode, a fine grid becomes one of whole 64-step blocks at least a
    chunk wide (256 steps for chunks of consecutive steps), still exact."""
    import wisp.server.series.grouped as G

    data = _log(store, 3, range(0, 3000), seed=3, keep=keep)
    monkeypatch.setattr(G, "MAX_POINTS", 100 if keep == 1.0 else 1000)
    out = grouped_series(store, "p", keys=["loss"], group_by=[], buckets=500)
    g0 = out["grids"][0]
    assert g0["origin"] == 0 and g0["width"] % 64 == 0 and g0["width"] >= 256
    if keep == 1.0:
        assert g0["width"] == 256
    s = out["groups"][0]["series"][0]
    want = _expect(data, out["groups"][0]["runs"], _bucket(g0, 500), 0, 2999)
    _check(s, want, _starts(g0, 500, want))


def test_no_group_by_is_one_group_and_missing_values_group_last(store: Any) -> None:
    """No fields: one group of every run; runs without the key form the last group."""
    _log(store, 3, range(10))
    store.put_run("bare", {"project": "p", "created_at": 99.0})
    out = grouped_series(store, "p", keys=["loss", "nope"], group_by=[], buckets=100)
    assert len(out["groups"]) == 1 and out["groups"][0]["label"] == "all runs"
    assert [s["key"] for s in out["groups"][0]["series"]] == ["loss"]
    out = grouped_series(store, "p", keys=["loss"], group_by=["config.lr"], filter_expr="")
    assert out["groups"][-1]["values"] == [None] and out["groups"][-1]["runs"] == ["bare"]
    assert out["groups"][-1]["series"] == []


def test_http_grouped_endpoint(api: Api, store: Any) -> None:
    """The endpoint answers the same as the store call, and names bad fields in a 422."""
    _log(store, 6, range(50))
    url = "/api/v1/projects/p/series/grouped"
    body = {"keys": ["loss"], "group_by": ["config.lr"], "filter": "config.lr < 0.05"}
    res = api.post(url, json=body)
    assert res.status_code == 200, res.text
    want = grouped_series(
        store, "p", keys=["loss"], group_by=["config.lr"], filter_expr="config.lr < 0.05"
    )
    assert res.json() == want
    assert [g["values"] for g in want["groups"]] == [[0.001], [0.01]]
    res = api.post(url, json={**body, "stats": ["median", "lo"]})
    s = res.json()["groups"][0]["series"][0]
    assert set(s) == {"key", "runs", "x", "n", "median", "lo"}
    assert s["median"] == want["groups"][0]["series"][0]["median"]
    for bad, field in (
        ({"keys": []}, "keys"),
        ({"keys": ["loss"], "group_by": ["bogus"]}, "group_by"),
        ({"keys": ["loss"], "filter": "config.lr <"}, "filter"),
        ({"keys": ["loss"], "buckets": 0}, "buckets"),
        ({"keys": ["loss"], "x": "time"}, "x"),
        ({"keys": ["loss"], "runs": ["../x"]}, "runs[0]"),
    ):
        res = api.post(url, json=bad)
        assert res.status_code == 422, (bad, res.text)
        assert res.json()["error"]["field"] == field, res.text
